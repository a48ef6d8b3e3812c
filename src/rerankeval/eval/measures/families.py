"""The built-in measure families, declared as data: each family's name, aliases, parameters, trec_eval
equivalents and summary, and where its kernel lives (``module:function`` in this package, imported the first
time a value is computed). Reading a measure name (a config, the CLI) reads this module only, so the stages
that merely name measures do not depend on the kernels' code; one declaration per family, in this one place."""

from __future__ import annotations

from .base import declare, declare_input

_GOLD = dict(parameters=(), needs="rag", cutoff=False, defines_no_relevant=True)
_GRADED = dict(parameters=("rel",), needs="rag", cutoff=False, defines_no_relevant=True)

declare_input("rag", "answers:rag_input")
declare_input("candidate_order", "candidates:candidate_input")
declare_input("ranking", "ranking:ranking_input")
declare_input("guardrails", "guardrails:guardrail_input")

declare("AnswerEM", **_GOLD, summary="exact match with any gold answer (SQuAD 1.1 / KorQuAD 1.0 rule; "
        "unanswerable: 1 when abstained)",
        kernel="answers:answer_em")
declare("AnswerF1", **_GOLD, summary="best F1 over the gold answers (word F1, character F1 for Korean; "
        "unanswerable: 1 when abstained)",
        kernel="answers:answer_f1")
declare("Abstained", parameters=(), needs="rag", cutoff=False, defines_no_relevant=True,
        summary="the generator said it cannot answer",
        kernel="answers:abstained")
declare("CorrectRefusal", **_GOLD, summary="abstained on an unanswerable query (share of gold queries)",
        kernel="answers:correct_refusal")
declare("IncorrectAnswer", **_GOLD, summary="answered wrongly, or answered an unanswerable query",
        kernel="answers:incorrect_answer")
declare("BoundaryPartial", **_GOLD, summary="answered with the gold's content but not its exact span",
        kernel="answers:boundary_partial_measure")
declare("FalseRefusal", **_GOLD, summary="abstained on an answerable query",
        kernel="answers:false_refusal")
declare("AbstentionPrecision", **_GOLD, summary="unanswerable share of the queries the system abstained on "
        "(domain: its abstentions)",
        kernel="answers:abstention_precision")
declare("AbstentionRecall", **_GOLD, summary="abstained, over the unanswerable queries",
        kernel="answers:abstention_recall")
declare("CitationPrecision", **_GRADED, summary="cited passages judged relevant / cited passages "
        "(domain: answers with a citation)",
        kernel="answers:citation_precision")
declare("CitationRecall", **_GRADED, summary="relevant context passages cited / relevant context passages "
        "(domain: answers whose context holds a relevant passage)",
        kernel="answers:citation_recall")
declare("ClaimSupport", parameters=(), needs="rag", cutoff=False, defines_no_relevant=True,
        summary="answer sentences supported by a cited passage / answer sentences (domain: answers)",
        kernel="answers:claim_support")
declare("UnsupportedAnswer", parameters=(), needs="rag", cutoff=False, defines_no_relevant=True,
        summary="the answer has a sentence no cited passage supports (0 when abstained)",
        kernel="answers:unsupported_answer")
declare("EvidenceCoverage", **_GRADED, summary="relevant passages in the context / relevant passages "
        "(domain: queries with one)",
        kernel="answers:evidence_coverage")
declare("ParentCoverage", **_GRADED, summary="parents of relevant passages found in the context / parents "
        "of relevant passages (domain: queries with one)",
        kernel="answers:parent_coverage")
declare("ContextPrecision", **_GRADED, summary="relevant passages in the context / context passages "
        "(domain: queries with a relevant passage)",
        kernel="answers:context_precision")
declare("Redundancy", parameters=(), needs="rag", cutoff=False, defines_no_relevant=True,
        summary="context passages whose parent was already selected / context passages",
        kernel="answers:redundancy")
declare("NearDuplicates", parameters=(), needs="rag", cutoff=False, defines_no_relevant=True,
        summary="context passages near-duplicating an earlier one (token Jaccard) / context passages",
        kernel="answers:near_duplicates")
declare("ContextTokens", parameters=(), needs="rag", cutoff=False, defines_no_relevant=True,
        summary="tokens in the selected context (words and punctuation marks)",
        kernel="answers:context_tokens")
declare("AnswerTokens", parameters=(), needs="rag", cutoff=False, defines_no_relevant=True,
        summary="prompt + completion tokens the generator reported (0 for the extractive one)",
        kernel="answers:answer_tokens")
declare("AnswerCost", parameters=(), needs="rag", cutoff=False, defines_no_relevant=True,
        summary="generation cost in USD from the configured token prices",
        kernel="answers:answer_cost")
declare("CandidateRecall", cutoff=True, parameters=("rel",), needs="candidate_order",
        summary="Success@k over the candidates in their original (fused_rank) order",
        kernel="candidates:candidate_recall")
declare("Coverage", cutoff=True, parameters=("rel",), needs="candidate_order",
        summary="relevant documents in the candidates' top k (fused_rank order) / relevant ones",
        kernel="candidates:coverage")
declare("Success", aliases=("Hit",), cutoff=True, parameters=("rel", "judged_only"),
    trec_eval="success", summary="1 if a relevant document is in the top k, else 0",
        kernel="ranking:success")
declare("P", cutoff=True, parameters=("rel", "judged_only"), trec_eval="P", trec_eval_uncut="set_P",
        summary="relevant documents in the top k / k",
        kernel="ranking:precision")
declare("R", cutoff=True, parameters=("rel", "judged_only"), trec_eval="recall",
    trec_eval_uncut="set_recall", summary="relevant documents in the top k / relevant documents",
        kernel="ranking:recall")
declare("Rprec", cutoff=False, parameters=("rel", "judged_only"), trec_eval="Rprec",
        summary="precision at rank R, R = number of relevant documents",
        kernel="ranking:r_precision")
declare("RR", aliases=("MRR",), cutoff=True, parameters=("rel", "judged_only"),
    trec_eval_uncut="recip_rank", summary="1 / rank of the first relevant document in the top k",
        kernel="ranking:reciprocal_rank")
declare("AP", aliases=("MAP",), cutoff=True, parameters=("rel", "judged_only"), trec_eval="map_cut",
    trec_eval_uncut="map", summary="sum of precision at each relevant rank <= k / relevant documents",
        kernel="ranking:average_precision")
declare("DCG", cutoff=True, parameters=("gain", "judged_only"),
        summary="sum of gain / log2(rank + 1) over the top k",
        kernel="ranking:dcg")
declare("nDCG", cutoff=True, parameters=("gain", "idcg", "judged_only"), trec_eval="ndcg_cut",
    trec_eval_uncut="ndcg", summary="DCG@k / ideal DCG@k",
        kernel="ranking:ndcg")
declare("Bpref", cutoff=False, parameters=("rel",), trec_eval="bpref",
        summary="trec_eval bpref: sum over relevant of 1 - min(nonrel above, R) / min(N, R), / R",
        kernel="ranking:bpref")
declare("SetF", cutoff=False, parameters=("rel", "judged_only"), trec_eval="set_F",
        summary="F1 of the whole list's precision and recall: 2PR / (P + R)",
        kernel="ranking:set_f")
declare("SetAP", cutoff=False, parameters=("rel", "judged_only"), trec_eval="set_map",
        summary="the whole list's precision times its recall",
        kernel="ranking:set_ap")
declare("Unjudged", cutoff=True, trec_eval="unj",
        summary="documents in the top k without a judgment (a negative grade counts as unjudged) / k",
        kernel="ranking:unjudged")
declare("Judged", cutoff=True,
        summary="judged documents in the top k / documents in the top k (1 - unjudged rate)",
        kernel="ranking:judged")
declare("ACLViolation", cutoff=True, needs="guardrails", defines_no_relevant=True,
        summary="1 if a document the asking user may not see is in the top k (its acl grants none of the user's "
        "groups), else 0; a hard guardrail: any violation REJECTs",
        kernel="guardrails:acl_violation")
declare("Stale", cutoff=True, needs="guardrails", defines_no_relevant=True,
        summary="outdated documents in the top k (at the query's as-of date) / documents in the top k",
        kernel="guardrails:stale")
declare("StaleFirst", cutoff=True, needs="guardrails", defines_no_relevant=True,
        summary="1 if an outdated document is in the top k with no later version of it ranked above it, else 0",
        kernel="guardrails:stale_first")

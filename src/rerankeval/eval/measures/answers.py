"""Measures of stages 3 and 4 of the funnel: the selected context and the generated answer, one value per query.

Their input kind is ``rag``: one row per query (aligned on the GradeMatrix's query ids) of the selected context, the
generated answer and the query's gold answers, handed to ``evaluate`` as ``sources={"rag": frame}``
(``rerankeval.rag.answer_measures`` builds it; ``RAG_COLUMNS`` lists what it holds). Every kernel returns NaN where the
measure is undefined on a query (its *domain*); means and paired intervals are taken over the domain
(``rerankeval.stats.domains``). Ranking measures are undefined on queries without a relevant passage; these families
define their own value there (``defines_no_relevant``).

Gold answers (SQuAD 2.0's convention for unanswerable questions): on an unanswerable query the correct answer is no
answer, so abstaining scores EM = F1 = 1 and any answer 0; on an answerable one abstaining scores 0. A generation
failure (the endpoint never answered) is neither an answer nor an abstention: 0 everywhere.

Text rules, per gold answer (the best over the gold answers counts):

- English and other non-Hangul golds: SQuAD 1.1 (lower-case, punctuation and the articles a/an/the removed,
  whitespace collapsed; F1 over word tokens).
- Golds containing Hangul: KorQuAD 1.0 (lower-case, punctuation and quotes/brackets removed; F1 over *characters*
  with whitespace removed), because Korean words carry particles: "마쓰모토 조지가" against the gold "마쓰모토 조지"
  has word F1 0.67 and EM 0, character F1 0.91.

Outcomes (one per query with gold): ``correct`` (EM), ``boundary_partial`` (answered, not EM, but one of prediction
and a gold contains the other, or F1 >= 0.5), ``incorrect_answer`` (any other answer, including every answer to an
unanswerable query), ``false_refusal`` (abstained on an answerable query), ``correct_refusal`` (abstained on an
unanswerable one), ``failed``.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from .base import Measure

RAG_COLUMNS = (
    "answerable", "gold_answers", "answer", "abstained", "failed", "citation_grades", "context_grades",
    "context_parents", "context_redundant", "context_near_duplicate", "context_tokens", "judged_grades",
    "judged_parents", "claims", "supported_claims", "prompt_tokens", "completion_tokens", "cost_usd",
)
BOUNDARY_F1 = 0.5
OUTCOMES = ("correct", "boundary_partial", "incorrect_answer", "false_refusal", "correct_refusal", "failed")

_HANGUL = re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)
_KORQUAD_MARKS = re.compile("['\"《》<>〈〉()‘’]")


def has_hangul(text: str) -> bool:
    return bool(_HANGUL.search(text))


def normalize_squad(text: str) -> str:
    """SQuAD 1.1's normalize_answer: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def normalize_korquad(text: str) -> str:
    """KorQuAD 1.0's normalize_answer: quotes and brackets to spaces, lower case, no punctuation, single spaces."""
    text = _KORQUAD_MARKS.sub(" ", unicodedata.normalize("NFC", text)).lower()
    return " ".join("".join(ch for ch in text if ch not in _PUNCTUATION).split())


def _f1(prediction: Sequence[str], gold: Sequence[str]) -> float:
    common = sum((Counter(prediction) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(prediction), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, gold: str) -> float:
    normalize = normalize_korquad if has_hangul(gold) else normalize_squad
    return float(normalize(prediction) == normalize(gold))


def token_f1(prediction: str, gold: str) -> float:
    """F1 of one prediction against one gold answer, under the gold's language rule (module docstring)."""
    if has_hangul(gold):
        return _f1(list(normalize_korquad(prediction).replace(" ", "")), list(normalize_korquad(gold).replace(" ", "")))
    return _f1(normalize_squad(prediction).split(), normalize_squad(gold).split())


def best_over_golds(score: Callable[[str, str], float], prediction: str, golds: Sequence[str]) -> float:
    return max((score(prediction, gold) for gold in golds), default=0.0)


def boundary_partial(prediction: str, golds: Sequence[str]) -> bool:
    for gold in golds:
        normalize = normalize_korquad if has_hangul(gold) else normalize_squad
        p, g = normalize(prediction), normalize(gold)
        if p and g and (p in g or g in p):
            return True
    return best_over_golds(token_f1, prediction, golds) >= BOUNDARY_F1


def outcome(answerable: bool, golds: Sequence[str], answer: str, abstained: bool, failed: bool) -> str:
    if failed:
        return "failed"
    if not answerable:
        return "correct_refusal" if abstained else "incorrect_answer"
    if abstained:
        return "false_refusal"
    if best_over_golds(exact_match, answer, golds) == 1.0:
        return "correct"
    return "boundary_partial" if boundary_partial(answer, golds) else "incorrect_answer"


class RagInput:
    """The ``rag`` input: per query (in the matrix's order) the context, the answer and the gold answers."""

    def __init__(self, frame, query_ids):
        """``frame``: a pandas DataFrame indexed by query_id with ``RAG_COLUMNS``; ``query_ids``: the matrix's."""
        missing = [column for column in RAG_COLUMNS if column not in frame.columns]
        if missing:
            raise ValueError(f"the rag input has no column(s) {missing}")
        self.rows = frame.reindex(query_ids)
        self.present = query_ids.isin(frame.index)

    def values(self, kernel: Callable[[object], float]) -> np.ndarray:
        """``kernel(row)`` per query; NaN for a query without a row (no answer was generated for it)."""
        out = np.full(len(self.rows), np.nan)
        for i, row in enumerate(self.rows.itertuples(index=False)):
            if self.present[i]:
                out[i] = kernel(row)
        return out


def rag_input(matrix) -> RagInput:
    sources = getattr(matrix, "sources", None) or {}
    if "rag" not in sources:
        raise ValueError("answer and context measures need the rag input: evaluate(..., sources={'rag': frame}) "
                         "(rerankeval.rag.answer_measures builds it)")
    return RagInput(sources["rag"], matrix.query_ids)


def _has_gold(row) -> bool:
    # pandas keeps None or NaN for a query without gold answers; pandas itself is not imported here (the command
    # line's --help loads the registry).
    return row.answerable is not None and row.answerable == row.answerable


def _answered(row) -> bool:
    return not row.abstained and not row.failed


def _gold_score(score: Callable[[str, str], float]) -> Callable[[object], float]:
    def kernel(row) -> float:
        if not _has_gold(row):
            return np.nan
        if row.failed:
            return 0.0
        if not row.answerable:
            return float(row.abstained)
        return 0.0 if row.abstained else best_over_golds(score, row.answer, list(row.gold_answers))
    return kernel


def _outcome_is(name: str) -> Callable[[object], float]:
    def kernel(row) -> float:
        if not _has_gold(row):
            return np.nan
        golds = list(row.gold_answers) if row.gold_answers is not None else []
        return float(outcome(bool(row.answerable), golds, row.answer, bool(row.abstained), bool(row.failed)) == name)
    return kernel


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else np.nan


def answer_em(m: Measure, rag: RagInput) -> np.ndarray:
    return rag.values(_gold_score(exact_match))


def answer_f1(m: Measure, rag: RagInput) -> np.ndarray:
    return rag.values(_gold_score(token_f1))


def abstained(m: Measure, rag: RagInput) -> np.ndarray:
    return rag.values(lambda row: float(row.abstained))


def correct_refusal(m: Measure, rag: RagInput) -> np.ndarray:
    return rag.values(_outcome_is("correct_refusal"))


def incorrect_answer(m: Measure, rag: RagInput) -> np.ndarray:
    return rag.values(_outcome_is("incorrect_answer"))


def boundary_partial_measure(m: Measure, rag: RagInput) -> np.ndarray:
    return rag.values(_outcome_is("boundary_partial"))


def false_refusal(m: Measure, rag: RagInput) -> np.ndarray:
    return rag.values(_outcome_is("false_refusal"))


def abstention_precision(m: Measure, rag: RagInput) -> np.ndarray:
    return rag.values(lambda row: float(not row.answerable) if _has_gold(row) and row.abstained else np.nan)


def abstention_recall(m: Measure, rag: RagInput) -> np.ndarray:
    return rag.values(lambda row: float(row.abstained) if _has_gold(row) and not row.answerable else np.nan)


def _relevant(grades, rel: int) -> int:
    return sum(1 for grade in grades if grade >= rel)


def citation_precision(m: Measure, rag: RagInput) -> np.ndarray:
    return rag.values(lambda row: _ratio(_relevant(row.citation_grades, m.rel), len(row.citation_grades))
                      if _answered(row) else np.nan)


def citation_recall(m: Measure, rag: RagInput) -> np.ndarray:
    return rag.values(lambda row: _ratio(_relevant(row.citation_grades, m.rel), _relevant(row.context_grades, m.rel))
                      if _answered(row) else np.nan)


def claim_support(m: Measure, rag: RagInput) -> np.ndarray:
    return rag.values(lambda row: _ratio(row.supported_claims, row.claims) if _answered(row) else np.nan)


def unsupported_answer(m: Measure, rag: RagInput) -> np.ndarray:
    return rag.values(lambda row: float(_answered(row) and row.supported_claims < row.claims))


def evidence_coverage(m: Measure, rag: RagInput) -> np.ndarray:
    return rag.values(lambda row: _ratio(_relevant(row.context_grades, m.rel), _relevant(row.judged_grades, m.rel)))


def _relevant_parents(grades, parents, rel: int) -> set:
    return {parent for grade, parent in zip(grades, parents) if grade >= rel}


def parent_coverage(m: Measure, rag: RagInput) -> np.ndarray:
    def kernel(row) -> float:
        wanted = _relevant_parents(row.judged_grades, row.judged_parents, m.rel)
        return _ratio(len(wanted & _relevant_parents(row.context_grades, row.context_parents, m.rel)), len(wanted))
    return rag.values(kernel)


def context_precision(m: Measure, rag: RagInput) -> np.ndarray:
    return rag.values(lambda row: _ratio(_relevant(row.context_grades, m.rel), len(row.context_grades))
                      if _relevant(row.judged_grades, m.rel) else np.nan)


def redundancy(m: Measure, rag: RagInput) -> np.ndarray:
    return rag.values(lambda row: _ratio(sum(row.context_redundant), len(row.context_redundant)))


def near_duplicates(m: Measure, rag: RagInput) -> np.ndarray:
    return rag.values(lambda row: _ratio(sum(row.context_near_duplicate), len(row.context_near_duplicate)))


def context_tokens(m: Measure, rag: RagInput) -> np.ndarray:
    return rag.values(lambda row: float(row.context_tokens))


def answer_tokens(m: Measure, rag: RagInput) -> np.ndarray:
    return rag.values(lambda row: float(row.prompt_tokens + row.completion_tokens))


def answer_cost(m: Measure, rag: RagInput) -> np.ndarray:
    return rag.values(lambda row: float(row.cost_usd))

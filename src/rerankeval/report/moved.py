"""What the reranker moved: per query, where the final top document was in the fused order and how far the relevant
documents moved; per slice, how often a judged document that the fused order put above the best one is pushed
below it.

Definitions (from the run's ``rank`` and ``fused_rank`` and the qrels):

* the best document of a query: its highest-graded document among the candidates (ties: the higher fused rank);
* a hard negative: a document judged 0 that the fused order ranked above the best document;
* a decoy: a document judged relevant but below the best grade that the fused order ranked above the best document
  (the twin error code, the outdated manual, last year's price list);
* pushed below: after reranking it ranks below the best document.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from .markdown import fmt, query_link, table

QUERY_COLUMNS = ["system", "query_id", "top_fused_rank", "best_fused_rank", "best_rank", "relevant_moved",
                 "hard_negatives", "hard_negatives_pushed", "decoys", "decoys_pushed"]


def moved_per_query(run: pd.DataFrame, qrels: pd.DataFrame, system: str) -> pd.DataFrame:
    """One row per query that has a relevant candidate (``QUERY_COLUMNS``). Grouped operations over the whole run: a
    loop over each query's frame made the demo's report stage 11.2-11.6 s against 6.9-7.1 s (with the explorer's
    per-query lookups made dictionaries; Intel Xeon, 2 cores, `python -m rerankeval.pipeline report`, twice each;
    every report file identical)."""
    judged = run[["query_id", "doc_id", "rank", "fused_rank"]].merge(
        qrels[["query_id", "doc_id", "relevance"]], on=["query_id", "doc_id"], how="left")
    relevant = judged[judged["relevance"] > 0]
    best = (relevant.sort_values(["query_id", "relevance", "fused_rank"], ascending=[True, False, True])
            .drop_duplicates("query_id").set_index("query_id")[["fused_rank", "rank"]]
            .rename(columns={"fused_rank": "best_fused_rank", "rank": "best_rank"}))
    above = judged.join(best, on="query_id", how="inner")
    above = above[above["relevance"].notna() & (above["fused_rank"] < above["best_fused_rank"])]
    negative, pushed = above["relevance"] <= 0, above["rank"] > above["best_rank"]
    by_query = above["query_id"]
    counts = pd.DataFrame({"hard_negatives": negative, "hard_negatives_pushed": negative & pushed,
                           "decoys": ~negative, "decoys_pushed": ~negative & pushed}).groupby(by_query).sum()
    moved = (relevant["fused_rank"] - relevant["rank"]).groupby(relevant["query_id"]).mean()
    top = run.loc[run["rank"] == 1].set_index("query_id")["fused_rank"]
    out = best.sort_index()
    out = pd.DataFrame({"system": system, "query_id": out.index.to_numpy(),
                        "top_fused_rank": top.loc[out.index].to_numpy().astype(int),
                        "best_fused_rank": out["best_fused_rank"].to_numpy().astype(int),
                        "best_rank": out["best_rank"].to_numpy().astype(int),
                        "relevant_moved": moved.reindex(out.index).to_numpy().astype(float),
                        **{column: counts[column].reindex(out.index, fill_value=0).to_numpy().astype(int)
                           for column in ("hard_negatives", "hard_negatives_pushed", "decoys", "decoys_pushed")}})
    return out[QUERY_COLUMNS]


def slice_summary(moved: pd.DataFrame, slices: pd.DataFrame) -> pd.DataFrame:
    """Per system and slice (``all`` first, then ``column=value``): queries, pushed-below rates, where the top
    document came from and how the best document moved."""
    rows = []
    labelled = moved.merge(slices, left_on="query_id", right_index=True, how="left")
    groups = [("all", labelled)] + [(f"{column}={value}", frame) for column in slices.columns
                                    for value, frame in labelled.groupby(labelled[column].fillna("(none)"), sort=True)]
    for name, frame in groups:
        for system, part in frame.groupby("system", sort=False):
            rows.append({"system": system, "slice": name, "queries": len(part),
                         "hard_negatives": int(part["hard_negatives"].sum()),
                         "hard_negatives_pushed": int(part["hard_negatives_pushed"].sum()),
                         "decoys": int(part["decoys"].sum()), "decoys_pushed": int(part["decoys_pushed"].sum()),
                         "top_from_fused_1": float((part["top_fused_rank"] == 1).mean()),
                         "top_from_beyond_10": float((part["top_fused_rank"] > 10).mean()),
                         "best_up": float((part["best_rank"] < part["best_fused_rank"]).mean()),
                         "best_down": float((part["best_rank"] > part["best_fused_rank"]).mean()),
                         "relevant_moved": float(part["relevant_moved"].mean())})
    return pd.DataFrame(rows)


def _share(pushed: int, total: int) -> str:
    return f"{pushed}/{total} ({pushed / total:.0%})" if total else "0/0"


def moved_section(runs: Mapping[str, pd.DataFrame], qrels: pd.DataFrame, queries: pd.DataFrame,
                  slice_columns: Sequence[str], baseline: str, systems: Sequence[str],
                  reference: Sequence[str] = (), worst_n: int = 5, explorer: str | None = None) -> str:
    """``reference``: systems left out of the per-slice and per-query tables (first-stage orders, oracle, random);
    the per-query table holds each reranker's ``worst_n`` queries whose best document fell furthest, each linked to
    the explorer (``explorer``: its path from the page)."""
    shown = [system for system in systems if system != baseline]
    if not shown:
        return ""
    moved = pd.concat([moved_per_query(runs[system], qrels, system) for system in shown], ignore_index=True)
    slices = queries.set_index("query_id")[[c for c in slice_columns if c in queries.columns]]
    summary = slice_summary(moved, slices)
    head = summary[summary["slice"] == "all"]
    # The hard-negative and decoy columns where the fused order put some above a best document; on binary qrels
    # that judge nothing 0 (SciFact) they would be 0/0 in every row.
    counted = [(kind, label) for kind, label in (("hard_negatives", "hard negatives"), ("decoys", "decoys"))
               if head[kind].sum() > 0]

    def pushed(r) -> list[str]:
        return [_share(getattr(r, f"{kind}_pushed"), getattr(r, kind)) for kind, _ in counted]

    rows = [[f"`{r.system}`", r.queries, *pushed(r), f"{r.top_from_fused_1:.0%}", f"{r.top_from_beyond_10:.0%}",
             f"{r.best_up:.0%} / {r.best_down:.0%}", fmt(r.relevant_moved, 2, signed=True)]
            for r in head.itertuples()]
    header = ["system", "queries", *(f"{label} pushed below the best doc" for _, label in counted),
              "top doc was fused #1", "top doc from beyond fused #10", "best doc up / down",
              "relevant docs moved (ranks)"]
    absent = {"hard_negatives": "hard negative (judged 0)",
              "decoys": "decoy (judged relevant below the query's best grade)"}
    missing = [absent[kind] for kind in absent if kind not in dict(counted)]
    counts = ("A hard negative is judged 0, a decoy judged relevant but below the query's best grade (a near-twin "
              "code, an outdated manual); each counted when the fused order put it above the best document, and "
              "pushed when the system ranks it below." if counted else "")
    if missing:
        left_out = "those columns are" if len(missing) > 1 else "its column is"
        counts += (f"{' ' if counts else ''}No {' or '.join(missing)} sat above a query's best document in the fused "
                   f"order, so there is none to push down: {left_out} left out.")
    parts = [f"## What the rerankers moved (against the `{baseline}` order)",
             f"{counts} Relevant docs moved: mean of fused rank minus final rank (positive: up).", table(header, rows)]
    by_slice = summary[(summary["slice"] != "all") & ~summary["system"].isin(reference)]
    if len(by_slice):
        slice_rows = [[f"`{r.system}`", r.slice, r.queries, *pushed(r), f"{r.best_up:.0%} / {r.best_down:.0%}"]
                      for r in by_slice.itertuples()]
        parts.append("<details><summary>Per slice</summary>\n\n" + table(
            ["system", "slice", "queries", *(f"{label} pushed" for _, label in counted), "best doc up / down"],
            slice_rows) + "\n\n</details>")
    fell = moved[~moved["system"].isin(reference) & (moved["best_rank"] > moved["best_fused_rank"])]
    fell = fell.assign(drop=fell["best_rank"] - fell["best_fused_rank"])
    query_rows = [[f"`{r.system}`", query_link(r.query_id, explorer), r.top_fused_rank,
                   f"{r.best_fused_rank} → {r.best_rank}", fmt(r.relevant_moved, 1, signed=True), *pushed(r)]
                  for _, frame in fell.groupby("system", sort=False)
                  for r in frame.sort_values(["drop", "query_id"], ascending=[False, True]).head(worst_n).itertuples()]
    if query_rows:
        parts.append(f"Per query, rerankers only: the {worst_n} queries of each whose best document fell furthest "
                     "(every query is in the explorer).\n\n" + table(
                         ["system", "query", "top doc's fused rank", "best doc fused → final", "relevant moved",
                          *(f"{label} pushed" for _, label in counted)], query_rows))
    return "\n\n".join(parts)

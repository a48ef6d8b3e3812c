"""DVC stage `rerank@<system>`: one system permutes the frozen candidates of the evaluation split's queries."""

import resource
import sys

import pyarrow.compute as pc

from rerankeval.io import read_table, sha256_file, table_metadata, write_table
from rerankeval.layout import CANDIDATES, SNAPSHOT_DIR, latency_path, load_params, run_path
from rerankeval.candidates import CANDIDATES_SCHEMA, verify_passages
from rerankeval.rerank import TIE_BREAK, RerankSettings, latency_table, rerank, run_table
from rerankeval.snapshot import Snapshot, check_provenance, retrieval_inputs
from rerankeval.systems import BuildContext, build_system


def main(system_name: str) -> None:
    params = load_params()
    config = params["systems"][system_name]
    split = params["dataset"]["eval_split"]
    snapshot = Snapshot(SNAPSHOT_DIR)
    check_provenance(CANDIDATES, table_metadata(CANDIDATES).get("snapshot", {}), retrieval_inputs(snapshot))

    queries = snapshot.table("queries").filter(pc.field("split") == split)
    if queries.num_rows == 0:
        raise SystemExit(f"rerank: no queries in split {split!r}; set dataset.eval_split to one of "
                         f"{sorted(snapshot.manifest['splits'])}.")
    candidates = read_table(CANDIDATES, CANDIDATES_SCHEMA)
    candidates = candidates.filter(pc.is_in(candidates.column("query_id"), queries.column("query_id"))).to_pandas()
    verify_passages(candidates, CANDIDATES)

    qrels = snapshot.table("qrels").to_pandas()
    system = build_system(system_name, config, BuildContext(qrels=qrels))
    settings = RerankSettings(depth=int(config["depth"]), deadline_s=config.get("deadline_s"),
                              warmup_queries=int(config.get("warmup_queries", 2)))
    texts = dict(zip(queries.column("query_id").to_pylist(), queries.column("text").to_pylist()))
    run, latency = rerank(candidates, texts, system, settings)
    metadata = {
        "system": system_name,
        "config": config,
        "split": split,
        "candidates_sha256": sha256_file(CANDIDATES),
        "snapshot": snapshot.hashes,
        "tie_break": TIE_BREAK,
        "describe": system.describe(),
    }
    write_table(run_path(system_name), run_table(run), metadata)
    # Timing-dependent facts live with the latency table, so the run file stays byte-identical across reruns.
    write_table(latency_path(system_name), latency_table(latency),
                {"system": system_name, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
    fallbacks = int((latency["mode"] == "FUSION_FALLBACK").sum())
    print(f"rerank[{system_name}]: {len(latency)} queries, depth {settings.depth}, {fallbacks} fallbacks, "
          f"{int(latency['cache_hits'].sum())} cache hits, {latency['total_s'].sum():.1f}s")


if __name__ == "__main__":
    main(sys.argv[1])

"""The pipeline's shape as data: every DVC stage, what it reads and what it writes, in one typed table.

``python -m rerankeval.pipeline.render`` writes the whole of dvc.yaml from this table (a test fails when the committed
file differs); the entry point (``python -m rerankeval.pipeline <stage> [<system>]``) runs a stage's module with the
settings view its ``reads`` declare, so a stage cannot read a setting it does not declare. No stage but ``code`` has
DVC ``params``: the ``code`` stage declares what every stage reads and writes each stage (each instance of a
per-system stage, ``foreach``) the values it declares, its one settings dep; the stage refuses to run when params.yaml
no longer holds them. DVC parses params.yaml once per stage that declares params, and dvc.lock holds a copy of each
declared value per stage, on every ``dvc status`` and ``dvc repro``: that was most of what a no-op cost. A stage's
code deps are the import closure of its own module and of the config modules of the settings it reads
(``pipeline.render``) and of the kinds its settings name (system kinds, the generator). The ``code`` stage writes the
sha256 of every such file, and the settings, into one file per stage (per system for a per-system stage), the one code
and settings dep of that stage (``pipeline.code``): DVC cannot list a different set of files for each system of a
``foreach``, and one small file per stage keeps dvc.lock, and so every ``dvc status``, small.
"""

from __future__ import annotations

from dataclasses import dataclass

PATHS = {
    "snapshot": "data/snapshot",
    "candidates": "data/candidates.parquet",
    "passages": "data/passages.parquet",
    "withheld": "data/withheld.parquet",
    "first_stage": "data/first_stage.parquet",
    "fallback": "data/fallback",
    "code": "data/code",
    "runs": "data/runs",
    "contexts": "data/contexts",
    "answers": "data/answers",
    "calibration": "data/calibration.json",
    "eval": "data/eval",
    "sweeps": "data/sweeps",
    "latency": "data/latency",
    "reports": "reports",
}
"""Every artefact folder and file, rendered as dvc.yaml's ``vars: paths`` (``PipelinePaths`` reads them there, in any
revision's dvc.yaml) and written out in the stages' deps and outs (``pipeline.render._dvc``)."""

SYSTEM = "{system}"
"""In a per-system stage's ``reads`` and files: the system the stage instance runs (``${key}`` in dvc.yaml)."""


@dataclass(frozen=True)
class Output:
    """One output as dvc.yaml declares it: ``cache: false`` for what git tracks (reports, small timing records),
    ``persist`` for what a stage updates in place, ``metric`` for what ``dvc metrics`` reads."""

    path: str
    cache: bool = True
    persist: bool = False
    metric: bool = False


@dataclass(frozen=True)
class Stage:
    """One DVC stage: ``module`` (in this package) runs it as ``run(settings, paths[, system])``."""

    name: str
    about: str
    """Rendered as the comment above the stage in dvc.yaml."""
    reads: tuple[str, ...]
    """The settings it reads, as dotted params.yaml keys: its settings view, recorded with their values in its
    fingerprint by the code stage, whose DVC ``params`` they are."""
    inputs: tuple[str, ...]
    """Data it reads, spelt as dvc.yaml spells deps (``${paths.snapshot}``, ``${dataset.path}``)."""
    outputs: tuple[Output, ...]
    per_system: bool = False
    each: str = "systems"
    """For a per-system stage: the params.yaml mapping DVC's ``foreach`` runs it over, whose keys are its second
    argument (``systems``; ``online.readouts`` for the online experiments' readouts)."""
    kinds: str | None = None
    """The kinds it builds, named by its settings: ``system`` (a per-system stage's system, its components at any
    depth), ``systems`` (every system's) or ``generator`` (rag.generator's): their code is in its fingerprint too."""

    @property
    def module(self) -> str:
        return f"rerankeval.pipeline.{self.name}"


def _paths(*names: str) -> tuple[str, ...]:
    return tuple(f"${{paths.{name}}}" for name in names)


FROZEN = _paths("snapshot", "candidates", "passages")
"""The frozen candidates a stage reads. The withheld file (what the access filter removed, read by an
``access_filter: false`` system only) is covered by the candidates dep: the candidates record its sha256, so it
cannot change without them, and its reader refuses a file that is not the recorded one."""
TENANT = "privacy.tenant"
"""Declared by every stage that opens a cache (pair scores, embeddings, LLM replies): the tenant names its folder
(``core.caches``); the entry point refuses a cache to a stage that does not declare it."""
FIT_SPLIT = ("dataset.name", "dataset.path", "train.fallback_path")
"""What reading a fitting split reads (``systems.splits``) besides the frozen candidates and the fallback stage's
output: the source it names, the fallback it names in a refusal."""

_STAGES: tuple[Stage, ...] = (
    Stage("snapshot", "The collection as content-hashed tables (rerankeval.data.snapshot).",
          reads=("dataset.name", "dataset.path", "dataset.splits", "dataset.eval_split", "dataset.sample"),
          inputs=("${dataset.path}",), outputs=(Output("${paths.snapshot}"),)),
    Stage("freeze", "The candidates every system reranks, with their exact text bytes, without what the asking user "
          "may not see (rerankeval.retrieval; what the access filter removed goes to the withheld file).",
          reads=("retrieval", TENANT),
          inputs=("${paths.snapshot}/corpus.parquet", "${paths.snapshot}/queries.parquet", "${retrieval.depends_on}"),
          outputs=(Output("${paths.candidates}"), Output("${paths.passages}"), Output("${paths.withheld}"),
                   Output("${paths.first_stage}"))),
    Stage("fallback", "The fitting splits the dataset lacks (most BEIR sets have a test split only), read from "
          "train.fallback_path and frozen once with the retrieval settings (rerankeval.pipeline.fallback).",
          reads=("train.fallback_path", "dataset.name", "dataset.path", "retrieval", TENANT),
          inputs=("${paths.snapshot}", "${train.fallback_path}"), outputs=(Output("${paths.fallback}"),)),
    Stage("train", "Fine-tunes our cross-encoder (systems.ce_minilm_ft) on the train split only, or on "
          "train.fallback_path's when the dataset has none (rerankeval.training).",
          reads=("train", "dataset.eval_split", *FIT_SPLIT),
          inputs=(*FROZEN, "${paths.fallback}"), outputs=(Output("${train.out_dir}"),)),
    Stage("rerank", "One stage per system. `depends_on` (conf/system/*.yaml) is the model directory or run file DVC "
          "watches for it; the code of its kind and its components' is in its code fingerprint.",
          reads=(f"systems.{SYSTEM}", "dataset.eval_split", *FIT_SPLIT, TENANT),
          inputs=(*FROZEN, "${paths.fallback}", "${item.depends_on}"),
          outputs=(Output(f"${{paths.runs}}/run_{SYSTEM}.parquet"), Output(f"${{paths.runs}}/latency_{SYSTEM}.parquet"),
                   Output(f"${{paths.runs}}/seed_runs_{SYSTEM}.parquet")),
          per_system=True, kinds="system"),
    Stage("latency", "The latency the verdict reads, measured on its own for every system: warmed up, repeated "
          "rounds, nothing cached, noise stated (rerankeval.serving.measure). With serving.loadtest.enabled (off in "
          "the demo) also the served model under load.",
          reads=("serving", "systems", "system_names", "dataset.eval_split", *FIT_SPLIT, TENANT),
          inputs=(*FROZEN, "${paths.fallback}", "${paths.runs}"),
          outputs=(Output("${paths.latency}", cache=False, persist=True),
                   Output("${paths.reports}/loadtest.json", cache=False, metric=True)),
          kinds="systems"),
    Stage("calibrate", "The generator's calibrated settings (the extractive abstention threshold), fitted once on the "
          "train split.",
          reads=("rag.select", "rag.generator", "rag.calibration_split", "retrieval.access", TENANT),
          inputs=FROZEN, outputs=(Output("${paths.calibration}"),), kinds="generator"),
    Stage("answer", "Steps 3 and 4 of the funnel, for every system: the context its ranking gives the generator "
          "(rerankeval.rag.select), then the answer one generator, prompt and budget writes from it for every "
          "system (rerankeval.rag.generators). One stage, not one per system: on the demo each system's is under a "
          "second's work, and each DVC stage costs more than that.",
          reads=("rag.select", "rag.generator", "rag.claims", "retrieval", "system_names", "dataset.eval_split",
                 TENANT),
          inputs=(*FROZEN, "${paths.runs}", "${paths.calibration}"),
          outputs=(Output("${paths.contexts}"), Output("${paths.answers}")),
          kinds="generator"),
    Stage("evaluate", "Per-query measures under their declared conventions (rerankeval.eval).",
          reads=("rag.measures", "evaluation.measures", "evaluation.oracle_measures", "evaluation.depths",
                 "evaluation.depth_measures", "evaluation.no_relevant", "evaluation.guardrails", "dataset.eval_split",
                 "retrieval.top_n", "retrieval.access", "system_names"),
          inputs=_paths("snapshot", "candidates", "first_stage", "runs", "contexts", "answers"),
          outputs=(Output("${paths.eval}"), Output("${paths.reports}/metrics.json", cache=False, metric=True))),
    Stage("sweep", "Policy sweeps (params `policies`) over stored scores, after every rerank stage so their pairs are "
          "in the cache.",
          reads=("policies", "systems", "compare", "evaluation", "dataset.eval_split", *FIT_SPLIT, TENANT),
          inputs=_paths("snapshot", "candidates", "fallback", "runs"), outputs=(Output("${paths.sweeps}"),),
          kinds="systems"),
    Stage("compare", "The typed analysis: paired CIs, verdicts, claims, power, the judging queue (rerankeval.stats), "
          "latency and cost per system and depth, and the quality-cost frontier (rerankeval.rerank.cost, "
          "rerankeval.policies.frontier).",
          reads=("compare", "dataset.eval_split", "dataset.critical_slices", "evaluation.warmup_queries",
                 "evaluation.no_relevant", "evaluation.hourly_price_usd", "evaluation.depth_measures",
                 "policies.measure",
                 "retrieval.top_n", "systems", "system_names", "privacy"),
          inputs=(*_paths("snapshot", "eval", "runs", "latency", "sweeps", "answers"),
                  "${paths.reports}/loadtest.json"),
          outputs=(Output("${paths.reports}/compare.json", cache=False, metric=True),
                   Output("${paths.reports}/verdicts.json", cache=False, metric=True),
                   Output("${paths.reports}/costs.json", cache=False),
                   Output("${paths.reports}/judging_queue.tsv", cache=False))),
    Stage("online", "Each challenger's online experiment sized before launch: simulated users on interleaved pages "
          "(team-draft, balanced, probabilistic), an A/B test and the paired offline comparison, at a stated power, "
          "with the sign test's false detection rate on seeded null pairs (rerankeval.online).",
          reads=(*(f"online.{key}" for key in ("enabled", "click_model", "depth", "ab_metric", "alpha", "power",
                                               "sessions_per_query", "check_trials", "check_max_impressions",
                                               "null_pairs", "null_impressions", "seed")),
                 "compare.baselines", "compare.release", "dataset.eval_split", "system_names"),
          inputs=_paths("snapshot", "eval", "runs"),
          outputs=(Output("${paths.reports}/online.json", cache=False),)),
    Stage("readout", "One stage per online experiment under online.readouts (none in a run without an interaction "
          "log): the log read and checked, per-arm click measures and interleaving credit with CIs, the guardrails "
          "and a verdict (rerankeval.online.readout).",
          reads=(f"online.readouts.{SYSTEM}", "compare.baselines", "compare.confidence", "compare.samples",
                 "compare.seed", "compare.ci_method"),
          inputs=(*_paths("snapshot", "candidates"), "${item.log}"),
          outputs=(Output(f"${{paths.reports}}/online/readout_{SYSTEM}.json", cache=False),
                   Output(f"${{paths.reports}}/online/readout_{SYSTEM}.md", cache=False)),
          per_system=True, each="online.readouts"),
    Stage("shadow", "One stage per query log under online.shadows (none without a log): the logged queries replayed, "
          "without judgments, through the frozen first stage and the systems; agreement with the baseline, latency at "
          "the log's arrival pattern (simulated, and sent to the served system with `served`), guardrails per "
          "segment, and the log's judging queue (rerankeval.online.shadow).",
          reads=(f"online.shadows.{SYSTEM}", "online.seed", "retrieval", "systems", "system_names", "serving.serve",
                 "compare.baselines", "compare.confidence", "compare.samples", "compare.seed", "compare.ci_method",
                 "dataset.eval_split", "privacy", *FIT_SPLIT),
          inputs=(*FROZEN, "${paths.fallback}", "${paths.runs}", "${item.log}"),
          outputs=(Output(f"${{paths.reports}}/online/shadow_{SYSTEM}.json", cache=False),
                   Output(f"${{paths.reports}}/online/shadow_{SYSTEM}.md", cache=False),
                   Output(f"${{paths.reports}}/online/shadow_{SYSTEM}_queue.tsv", cache=False)),
          per_system=True, each="online.shadows", kinds="systems"),
    Stage("report", "The decision page, details, plots and the offline site, rendered from the analysis.",
          reads=("evaluation", "compare", "retrieval", "dataset.name", "dataset.eval_split", "dataset.critical_slices",
                 "systems", "system_names", "rag", "train.out_dir", "privacy", "online.readouts", "online.shadows"),
          inputs=(*_paths("snapshot", "candidates", "passages", "eval", "runs", "latency"),
                  "${paths.reports}/loadtest.json", *_paths("contexts", "answers", "calibration", "sweeps"),
                  *(f"${{paths.reports}}/{name}" for name in ("metrics.json", "compare.json", "verdicts.json",
                                                             "costs.json", "judging_queue.tsv", "online.json")),
                  "${train.out_dir}"),
          outputs=tuple(Output(f"${{paths.reports}}/{name}", cache=False)
                        for name in ("report.md", "details.md", "evaluation.yaml", "plots", "site"))),
)



def _code_reads(own: tuple[str, ...], stages: tuple[Stage, ...]) -> tuple[str, ...]:
    """The code stage's ``own`` settings and what every stage reads, a per-system stage's for every system or item at
    once (``systems.{system}`` -> ``systems``), each key once and none under another: it writes each stage its own."""
    keys = [*own, *(key.removesuffix(f".{SYSTEM}") for stage in stages for key in stage.reads)]
    return tuple(dict.fromkeys(key for key in keys if not any(key.startswith(other + ".") for other in keys)))


CODE = Stage("code", "The code each stage runs and the settings it reads: its import closure and the kinds it builds "
             "(its systems' and their components', the generator), and the values of the settings it declares (for "
             "each system a per-system stage runs for, that instance's). An edit re-runs the stages whose code or "
             "settings it is and no other; `data/code/<stage>.json` (`<stage>_<system>.json`) lists the files and the "
             "settings.",
             reads=_code_reads(("systems", "rag.generator"), _STAGES),
             inputs=("stages/python", "src/rerankeval", "pyproject.toml"), outputs=(Output("${paths.code}"),))
STAGES: tuple[Stage, ...] = (CODE, *_STAGES)
BY_NAME = {stage.name: stage for stage in STAGES}


def dvc_params(stage: Stage) -> tuple[str, ...]:
    """What dvc.yaml declares as ``stage``'s params: the code stage's reads; every other stage's settings are in its
    code dep."""
    return stage.reads if stage is CODE else ()


def code_file(stage: Stage, system: str = SYSTEM) -> str:
    """The name (in ``paths.code``) of the fingerprint of the code ``stage`` runs, and for a per-system stage of the
    settings its instance for ``system`` reads (``pipeline.code``)."""
    return f"{stage.name}_{system}.json" if stage.per_system else f"{stage.name}.json"

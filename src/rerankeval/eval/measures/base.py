"""Measures as immutable values, and the open registry of measure families.

A measure prints as its canonical string, which names its column in every output. The
trec_eval convention is the default and prints bare (``nDCG@10`` is trec_eval's
``ndcg_cut_10``); any other convention is listed in brackets, only the parameters that
differ from their default, always in the order gain, idcg, rel, judged_only:
``nDCG@10[gain=exp,idcg=candidates]``. ``parse_measure`` reads such a string back and
accepts each family's aliases (MRR, MAP, Hit), in any letter case, and trec_eval's names of the
measures it equals (``ndcg_cut_10`` or ``ndcg_cut.10``, ``map``, ``recip_rank``, ``P_10``), derived
from each family's declared trec_eval equivalent, so they cannot drift from ``Measure.trec_eval``.

Parameters:

- ``cutoff``: score the top k of the ranking only; None scores the whole list.
- ``gain``: ``linear`` (gain = grade, as trec_eval) or ``exp`` (gain = 2^grade - 1).
- ``idcg``: ``qrels`` normalises by the ideal ordering of every judged document, as
  trec_eval's ndcg_cut; ``candidates`` by the ideal ordering of the ranked documents only.
- ``rel``: binary measures count a document as relevant when its grade >= rel (trec_eval -l).
- ``judged_only``: remove unjudged documents before scoring (trec_eval -J, "condensed lists");
  as in trec_eval, a negative grade counts as unjudged there.

A built-in family is declared once, as data, in ``families`` (``declare``): its signature and where its kernel
lives, imported the first time a value is computed, so reading a measure name never loads a kernel. The kernel receives
the Measure and the per-query input its family ``needs``, built once per evaluation by the builder declared for that
input kind (``declare_input``), and returns one float64 per query. Third-party packages register families through the
``rerankeval.measures`` entry-point group, with ``register_measure`` on the kernel itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, fields
from importlib import import_module

import numpy as np

from ...core.errors import ConfigError
from ...core.registry import Registry

GAINS = ("linear", "exp")
IDCGS = ("qrels", "candidates")
PARAMETERS = ("gain", "idcg", "rel", "judged_only")

Kernel = Callable[["Measure", object], np.ndarray]


@dataclass(frozen=True)
class Family:
    """One measure family: its name, what it takes, what it equals in trec_eval, and its kernel.

    ``trec_eval`` names the trec_eval measure a cutoff k turns into ``{trec_eval}_{k}`` (for a
    family without cutoff: the measure itself); ``trec_eval_uncut`` the one without cutoff.
    ``needs`` is the input kind the kernel reads (see ``register_input``). ``defines_no_relevant``: the kernel
    gives its own value (or NaN) on queries without a relevant document, which ``evaluate`` otherwise sets to 0.
    """

    name: str
    aliases: tuple[str, ...]
    takes_cutoff: bool
    parameters: tuple[str, ...]
    summary: str
    trec_eval: str | None
    trec_eval_uncut: str | None
    needs: str
    kernel_at: Kernel | str
    """The kernel, or where it lives: ``module:function`` of this package, imported at the first value."""
    defines_no_relevant: bool = False

    @property
    def kernel(self) -> Kernel:
        return _resolved(self.kernel_at)


FAMILIES: Registry[Family] = Registry("measure", "rerankeval.measures", ignore_case=True)
"""Measure families by name and alias, any letter case; plugins register through the ``rerankeval.measures``
entry-point group."""
INPUTS: Registry[Callable | str] = Registry("measure input kind")


def _resolved(target: Callable | str) -> Callable:
    """A kernel or input builder, importing its module (``module:function`` in this package) when given by name."""
    if not isinstance(target, str):
        return target
    module, _, function = target.partition(":")
    return getattr(import_module(f"{__package__}.{module}"), function)


def declare(name: str, *, cutoff: bool, parameters: tuple[str, ...] = (), summary: str, kernel: str,
            aliases: tuple[str, ...] = (), trec_eval: str | None = None, trec_eval_uncut: str | None = None,
            needs: str = "ranking", defines_no_relevant: bool = False) -> None:
    """Declare a built-in family whose kernel is ``kernel`` (``module:function`` in this package)."""
    _check_parameters(name, parameters)
    FAMILIES.add(name, Family(name, tuple(aliases), cutoff, tuple(parameters), summary, trec_eval, trec_eval_uncut,
                              needs, kernel, defines_no_relevant), aliases)


def declare_input(kind: str, builder: str) -> None:
    """Declare that the input kind ``kind`` is built by ``builder`` (``module:function`` in this package)."""
    INPUTS.add(kind, builder)


def _check_parameters(name: str, parameters: tuple[str, ...]) -> None:
    unknown = [p for p in parameters if p not in PARAMETERS]
    if unknown:
        raise ValueError(f"measure {name}: unknown parameter(s) {', '.join(unknown)}; valid: {', '.join(PARAMETERS)}")


def register_measure(
    name: str,
    *,
    cutoff: bool,
    parameters: tuple[str, ...] = (),
    summary: str,
    aliases: tuple[str, ...] = (),
    trec_eval: str | None = None,
    trec_eval_uncut: str | None = None,
    needs: str = "ranking",
    defines_no_relevant: bool = False,
) -> Callable[[Kernel], Kernel]:
    """Decorator declaring a measure family on its kernel ``kernel(measure, input) -> per-query values`` (a plugin's
    way; the built-in families are declared in ``families``)."""
    _check_parameters(name, parameters)

    def register(kernel: Kernel) -> Kernel:
        FAMILIES.add(name, Family(name, tuple(aliases), cutoff, tuple(parameters), summary, trec_eval,
                                  trec_eval_uncut, needs, kernel, defines_no_relevant), aliases)
        return kernel

    return register


def register_input(kind: str) -> Callable[[Callable], Callable]:
    """Decorator declaring how the input kind ``kind`` is built from a GradeMatrix, once per evaluation."""

    def register(build: Callable) -> Callable:
        return INPUTS.add(kind, build)

    return register


def family(name: str) -> Family:
    """The family registered under a name or alias, any letter case."""
    return FAMILIES.get(name)


def families() -> tuple[Family, ...]:
    return tuple(FAMILIES.in_registration_order())


def build_input(kind: str, matrix) -> object:
    return _resolved(INPUTS.get(kind))(matrix)


def measure_names() -> str:
    """Every valid measure name with its aliases, for error messages and help texts."""
    return FAMILIES.known()


def describe_measures() -> str:
    """One line per measure: its name, what it computes, its parameters and its trec_eval name."""
    lines = []
    for f in families():
        usage = f"{f.name}@k" if f.takes_cutoff else f.name
        params = f" [{', '.join(f.parameters)}]" if f.parameters else ""
        trec = [f"{f.trec_eval}_k" if f.takes_cutoff and f.trec_eval else f.trec_eval, f.trec_eval_uncut]
        trec = [name for name in trec if name]
        same = f" (trec_eval {' / '.join(trec)})" if trec else ""
        lines.append(f"{usage}{params}: {f.summary}{same}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Measure:
    """One measure with its conventions; ``str(measure)`` is its canonical column name."""

    name: str
    cutoff: int | None = None
    gain: str = "linear"
    idcg: str = "qrels"
    rel: int = 1
    judged_only: bool = False

    def __post_init__(self) -> None:
        kind = family(self.name)
        object.__setattr__(self, "name", kind.name)
        if self.cutoff is not None:
            if not kind.takes_cutoff:
                raise ValueError(f"{self.name} takes no cutoff (got @{self.cutoff})")
            if isinstance(self.cutoff, bool) or not isinstance(self.cutoff, int) or self.cutoff < 1:
                raise ValueError(f"cutoff must be an integer >= 1, got {self.cutoff!r}")
        if self.gain not in GAINS:
            raise ValueError(f"gain must be one of {', '.join(GAINS)}, got {self.gain!r}")
        if self.idcg not in IDCGS:
            raise ValueError(f"idcg must be one of {', '.join(IDCGS)}, got {self.idcg!r}")
        if isinstance(self.rel, bool) or not isinstance(self.rel, int) or self.rel < 1:
            raise ValueError(f"rel must be an integer >= 1 (grade 0 means judged non-relevant), got {self.rel!r}")
        if not isinstance(self.judged_only, bool):
            raise ValueError(f"judged_only must be True or False, got {self.judged_only!r}")
        for param in PARAMETERS:
            if param not in kind.parameters and getattr(self, param) != _DEFAULTS[param]:
                raise ValueError(_not_a_parameter(param, self.name))

    def __str__(self) -> str:
        text = self.name if self.cutoff is None else f"{self.name}@{self.cutoff}"
        changed = [
            f"{param}={_format_value(getattr(self, param))}"
            for param in PARAMETERS
            if getattr(self, param) != _DEFAULTS[param]
        ]
        return f"{text}[{','.join(changed)}]" if changed else text

    @property
    def family(self) -> Family:
        return family(self.name)

    @property
    def trec_eval(self) -> str | None:
        """The trec_eval measure this one equals (run with ``-l rel``, and ``-J`` when judged_only), if any."""
        kind = self.family
        if self.gain != "linear" or self.idcg != "qrels":
            return None
        if not kind.takes_cutoff:
            return kind.trec_eval
        if self.cutoff is None:
            return kind.trec_eval_uncut
        return f"{kind.trec_eval}_{self.cutoff}" if kind.trec_eval else None


_DEFAULTS = {f.name: f.default for f in fields(Measure) if f.name in PARAMETERS}


def _not_a_parameter(param: str, name: str) -> str:
    takes = ", ".join(family(name).parameters) or "no parameters"
    return f"parameter {param!r} does not apply to {name}; {name} takes: {takes}"


def _format_value(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _parse_value(param: str, token: str, text: str) -> object:
    if param == "rel":
        if not re.fullmatch(r"[+-]?\d+", token):
            raise ValueError(f"rel must be an integer in {text!r}, got {token!r}")
        return int(token)
    if param == "judged_only":
        if token.lower() not in ("true", "false"):
            raise ValueError(f"judged_only must be true or false in {text!r}, got {token!r}")
        return token.lower() == "true"
    return token


_SYNTAX = re.compile(r"(?P<name>[A-Za-z][A-Za-z0-9]*)(?:@(?P<cutoff>[^\[\]]*))?(?:\[(?P<params>[^\[\]]*)\])?")


TREC_EVAL_VERSIONS = ("9.0.8", "10.0")
"""How trec_eval breaks ties between scores: 9.0.8 (what pytrec_eval builds, and the engine's TIE_BREAK_RULE) compares
them as 32-bit floats, 10.0 as doubles; both then order equal scores by doc id, descending."""

# trec_eval measures that are no measure family here: ``rerankeval trec_eval`` prints them (its counts, geometric
# means and ``eval.trec_lists``), the measure parser names them in its refusal, so that a user sees it is not a typo.
TREC_EVAL_ONLY = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "gm_map", "gm_bpref", "iprec_at_recall",
                  "11pt_avg", "infAP", "relstring", "Rprec_mult", "utility", "ndcg_rel", "Rndcg", "binG", "G", "dcg",
                  "ideal_dcg", "relative_P", "set_relative_P", "num_nonrel_judged_ret", "rbp", "rbp_resid")
TREC_EVAL_SETS = ("official", "all_trec")
"""trec_eval's nicknames for measure sets (``-m official``): ``rerankeval trec_eval`` prints each set."""


def trec_eval_names() -> str:
    """The trec_eval names ``parse_measure`` accepts, k standing for a cutoff (``P_k`` or ``P.k``)."""
    names = []
    for f in families():
        if f.trec_eval:
            names.append(f"{f.trec_eval}_k" if f.takes_cutoff else f.trec_eval)
        if f.trec_eval_uncut:
            names.append(f.trec_eval_uncut)
    return ", ".join(names)


def _from_trec_eval(text: str) -> Measure | None:
    """The measure a trec_eval name (``ndcg_cut_10``, ``ndcg_cut.10``, ``map``; any letter case) equals, if any;
    its conventions are trec_eval's defaults (``-l 1``, no ``-J``)."""
    folded = text.casefold()
    for f in families():
        if f.trec_eval_uncut and folded == f.trec_eval_uncut.casefold():
            return Measure(f.name)
        if f.trec_eval and not f.takes_cutoff and folded == f.trec_eval.casefold():
            return Measure(f.name)
        if f.trec_eval and f.takes_cutoff:
            cut = re.fullmatch(re.escape(f.trec_eval.casefold()) + r"[._](\d+)", folded)
            if cut and int(cut[1]) >= 1:
                return Measure(f.name, int(cut[1]))
    return None


def _trec_eval_hint(text: str) -> str:
    """What to say of a name trec_eval has but rerankeval lacks, then the trec_eval names accepted."""
    head = re.split(r"[._]\d", text.strip(), maxsplit=1)[0].casefold()
    only = next((name for name in TREC_EVAL_ONLY if head == name.casefold()), None)
    measure_set = next((name for name in TREC_EVAL_SETS if text.strip().casefold() == name), None)
    lacking = (f"trec_eval's {only} is no measure rerankeval compares systems by: `rerankeval trec_eval -m {only}` "
               "prints it; " if only else
               f"{measure_set} is trec_eval's name for a set of measures: `rerankeval trec_eval -m {measure_set}` "
               "prints the set; " if measure_set else "")
    return f"{lacking}trec_eval names accepted (k a cutoff, P_k or P.k): {trec_eval_names()}"


def as_measure(measure: Measure | str) -> Measure:
    """A Measure as it is, a string parsed with ``parse_measure``."""
    return measure if isinstance(measure, Measure) else parse_measure(measure)


_IR_MEASURES = re.compile(r"(?P<name>[A-Za-z][A-Za-z0-9]*)\((?P<params>[^()]*)\)(?:@(?P<cutoff>\d+))?")
"""ir_measures' spelling, ``NAME(param=value,...)@k``: ``RR(rel=2)@10``, ``AP(rel=2)``, ``nDCG(dcg='exp-log2')@10``."""
_IR_MEASURES_PARAMETERS = {("rel", None): ("rel", None), ("judged_only", "true"): ("judged_only", "true"),
                           ("judged_only", "false"): ("judged_only", "false"), ("dcg", "exp-log2"): ("gain", "exp"),
                           ("dcg", "log2"): (None, None)}
"""ir_measures' parameters as rerankeval's (None for the value: any); ``dcg='log2'`` is the default linear gain."""


IR_MEASURES_FAMILIES = {"AP": ("rel", "judged_only"), "Bpref": ("rel",), "Judged": (),
                        "nDCG": ("gain", "judged_only"), "P": ("rel", "judged_only"), "R": ("rel", "judged_only"),
                        "Rprec": ("rel", "judged_only"), "RR": ("rel", "judged_only"),
                        "SetAP": ("rel", "judged_only"), "SetF": ("rel", "judged_only"),
                        "Success": ("rel", "judged_only")}
"""The families ir_measures has under the same name, each with the parameters ir_measures takes for it (``gain`` is
its ``dcg``); tests/test_ir_measures_names.py checks each family's values against the ir_measures package."""


IR_MEASURES_UNCUT = {"P": ("SetP", ("rel", "judged_only")), "R": ("SetR", ("rel",)), "Success": None}
"""ir_measures' name for a family here without a cutoff where it differs: P and R without one are set measures
(trec_eval's set_P and set_recall), and ir_measures' Success needs a cutoff."""


_IR_MEASURES_SET = {spelled[0]: name for name, spelled in IR_MEASURES_UNCUT.items() if spelled}
"""ir_measures' set measures read back as the families here they are without a cutoff (``SetP`` -> ``P``)."""


def ir_measures_name(measure: Measure) -> str | None:
    """``measure`` in ir_measures' spelling (``P@5[rel=2]`` -> ``P(rel=2)@5``, ``P`` -> ``SetP``), None where
    ir_measures has no measure of its conventions (another family, ``idcg=candidates``, a parameter ir_measures does
    not take for it)."""
    name, takes = measure.name, IR_MEASURES_FAMILIES.get(measure.name)
    if measure.cutoff is None and name in IR_MEASURES_UNCUT:
        name, takes = IR_MEASURES_UNCUT[name] or (name, None)
    if takes is None or measure.idcg != _DEFAULTS["idcg"]:
        return None
    changed = [param for param in PARAMETERS if getattr(measure, param) != _DEFAULTS[param]]
    if any(param not in takes for param in changed):
        return None
    spelled = {"rel": f"rel={measure.rel}", "judged_only": "judged_only=True", "gain": "dcg='exp-log2'"}
    params = ",".join(spelled[param] for param in changed)
    return name + (f"({params})" if params else "") + (f"@{measure.cutoff}" if measure.cutoff is not None else "")


def _from_ir_measures(text: str) -> str | None:
    """An ir_measures name in rerankeval's syntax (``P(rel=2)@5`` -> ``P@5[rel=2]``), or None when ``text`` is not in
    ir_measures' spelling; a parameter rerankeval lacks is refused by name."""
    match = _IR_MEASURES.fullmatch(text if "(" in text or text not in _IR_MEASURES_SET else f"{text}()")
    if match is None:
        return None
    params = []
    for item in filter(None, (part.strip() for part in match["params"].split(","))):
        key, _, value = (part.strip().strip("'\"") for part in item.partition("="))
        mapped = (_IR_MEASURES_PARAMETERS.get((key, value.lower()))
                  or _IR_MEASURES_PARAMETERS.get((key, None)))
        if mapped is None:
            raise ValueError(f"ir_measures parameter {item!r} in {text!r} has no rerankeval equivalent; accepted: "
                             "rel=N, judged_only=True|False, dcg='log2'|'exp-log2'")
        if mapped[0] is not None:
            params.append(f"{mapped[0]}={mapped[1] or value}")
    cutoff = f"@{match['cutoff']}" if match["cutoff"] else ""
    name = _IR_MEASURES_SET.get(match["name"], match["name"]) if not cutoff else match["name"]
    return f"{name}{cutoff}" + (f"[{','.join(params)}]" if params else "")


def parse_measure(text: str) -> Measure:
    """Read a measure from its string, e.g. ``nDCG@10``, ``MRR@10``, ``AP``, ``nDCG@10[gain=exp]``, from its
    trec_eval name (``ndcg_cut_10``, ``ndcg_cut.10``, ``map``, ``recip_rank``: see ``trec_eval_names``) or from its
    ir_measures name (``RR(rel=2)@10``, ``AP(rel=2)``, ``nDCG(dcg='exp-log2')@10``).

    Raises ValueError naming the offending token when the name, cutoff or a parameter is invalid.
    """
    trec_eval = _from_trec_eval(text.strip())
    if trec_eval is not None:
        return trec_eval
    ir_measures = _from_ir_measures(text.strip())
    if ir_measures is not None:
        return parse_measure(ir_measures)
    match = _SYNTAX.fullmatch(text.strip())
    if match is None:
        raise ValueError(
            f"cannot read measure {text!r}; expected NAME, NAME@k or NAME@k[param=value,...], "
            f"e.g. nDCG@10[gain=exp]; valid names: {measure_names()}; {_trec_eval_hint(text)}"
        )
    try:
        kind = family(match["name"])
    except ConfigError as exc:
        raise ConfigError(f"{exc} (in {text!r}); {_trec_eval_hint(text)}") from None
    cutoff = None
    if match["cutoff"] is not None:
        if not match["cutoff"].isdigit():
            raise ValueError(f"bad cutoff {match['cutoff']!r} in {text!r}: expected an integer >= 1 after '@'")
        cutoff = int(match["cutoff"])
        if cutoff < 1:
            raise ValueError(f"bad cutoff {match['cutoff']!r} in {text!r}: the cutoff must be >= 1")
    params: dict[str, object] = {}
    if match["params"] is not None:
        for item in match["params"].split(","):
            key, sep, token = (part.strip() for part in item.partition("="))
            if not sep or not key or not token:
                raise ValueError(f"bad parameter {item.strip()!r} in {text!r}: expected key=value")
            if key not in PARAMETERS:
                raise ValueError(
                    f"unknown parameter {key!r} in {text!r}; valid parameters: {', '.join(PARAMETERS)}"
                )
            if key not in kind.parameters:
                raise ValueError(f"{_not_a_parameter(key, kind.name)} (in {text!r})")
            if key in params:
                raise ValueError(f"parameter {key!r} given twice in {text!r}")
            params[key] = _parse_value(key, token, text)
    try:
        return Measure(kind.name, cutoff, **params)
    except ValueError as exc:
        raise ValueError(f"{exc} (in {text!r})") from None

"""Measures as immutable values: a name, a cutoff and the conventions that change the number.

A measure prints as its canonical string, which names its column in every output. The
trec_eval convention is the default and prints bare (``nDCG@10`` is trec_eval's
``ndcg_cut_10``); any other convention is listed in brackets, only the parameters that
differ from their default, always in the order gain, idcg, rel, judged_only:
``nDCG@10[gain=exp,idcg=candidates]``. ``parse_measure`` reads such a string back and
accepts the usual aliases (MRR, MAP, Hit, any letter case).

Parameters:

- ``cutoff``: score the top k of the ranking only; None scores the whole list.
- ``gain``: ``linear`` (gain = grade, as trec_eval) or ``exp`` (gain = 2^grade - 1).
- ``idcg``: ``qrels`` normalises by the ideal ordering of every judged document, as
  trec_eval's ndcg_cut; ``candidates`` by the ideal ordering of the ranked documents only.
- ``rel``: binary measures count a document as relevant when its grade >= rel.
- ``judged_only``: remove unjudged documents before scoring (trec_eval -J, "condensed lists").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

GAINS = ("linear", "exp")
IDCGS = ("qrels", "candidates")
PARAMETERS = ("gain", "idcg", "rel", "judged_only")


@dataclass(frozen=True)
class _Kind:
    takes_cutoff: bool
    parameters: tuple[str, ...]
    summary: str


_KINDS: dict[str, _Kind] = {
    "Success": _Kind(True, ("rel", "judged_only"), "1 if a relevant document is in the top k, else 0"),
    "P": _Kind(True, ("rel", "judged_only"), "relevant documents in the top k / k"),
    "R": _Kind(True, ("rel", "judged_only"), "relevant documents in the top k / relevant documents"),
    "Rprec": _Kind(False, ("rel", "judged_only"), "precision at rank R, R = number of relevant documents"),
    "RR": _Kind(True, ("rel", "judged_only"), "1 / rank of the first relevant document in the top k"),
    "AP": _Kind(True, ("rel", "judged_only"), "sum of precision at each relevant rank <= k / relevant documents"),
    "DCG": _Kind(True, ("gain", "judged_only"), "sum of gain / log2(rank + 1) over the top k"),
    "nDCG": _Kind(True, ("gain", "idcg", "judged_only"), "DCG@k / ideal DCG@k"),
    "Bpref": _Kind(False, ("rel",), "trec_eval bpref: sum over relevant of 1 - min(nonrel above, R) / min(N, R), / R"),
    "Judged": _Kind(True, (), "judged documents in the top k / documents in the top k (1 - unjudged rate)"),
    "CandidateRecall": _Kind(True, ("rel",), "Success@k over the candidates in their original (fused_rank) order"),
    "Coverage": _Kind(True, ("rel",), "relevant documents in the candidates' top k (fused_rank order) / relevant ones"),
}

_ALIASES = {"Hit": "Success", "MRR": "RR", "MAP": "AP"}

# Names are matched case-insensitively: NDCG, ndcg and nDCG are one measure.
_LOOKUP = {name.lower(): name for name in _KINDS} | {alias.lower(): name for alias, name in _ALIASES.items()}

_SYNTAX = re.compile(r"(?P<name>[A-Za-z]+)(?:@(?P<cutoff>[^\[\]]*))?(?:\[(?P<params>[^\[\]]*)\])?")


def measure_names() -> str:
    """Every valid measure name with its aliases, for error messages and help texts."""
    aliases = {name: alias for alias, name in _ALIASES.items()}
    return ", ".join(f"{name} (alias {aliases[name]})" if name in aliases else name for name in _KINDS)


def describe_measures() -> str:
    """One line per measure: its name, what it computes and which parameters it takes."""
    lines = []
    for name, kind in _KINDS.items():
        usage = f"{name}@k" if kind.takes_cutoff else name
        params = f" [{', '.join(kind.parameters)}]" if kind.parameters else ""
        lines.append(f"{usage}{params}: {kind.summary}")
    return "\n".join(lines)


def _canonical_name(name: str) -> str:
    try:
        return _LOOKUP[name.lower()]
    except KeyError:
        raise ValueError(f"unknown measure {name!r}; valid names: {measure_names()}") from None


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
        object.__setattr__(self, "name", _canonical_name(self.name))
        kind = _KINDS[self.name]
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
    def needs_candidate_order(self) -> bool:
        """Whether the measure reads the run's original candidate order (its fused_rank column)."""
        return self.name in ("CandidateRecall", "Coverage")


_DEFAULTS = {f.name: f.default for f in fields(Measure) if f.name in PARAMETERS}


def _not_a_parameter(param: str, name: str) -> str:
    takes = ", ".join(_KINDS[name].parameters) or "no parameters"
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


def as_measure(measure: Measure | str) -> Measure:
    """A Measure as it is, a string parsed with ``parse_measure``."""
    return measure if isinstance(measure, Measure) else parse_measure(measure)


def parse_measure(text: str) -> Measure:
    """Read a measure from its string, e.g. ``nDCG@10``, ``MRR@10``, ``AP``, ``nDCG@10[gain=exp]``.

    Raises ValueError naming the offending token when the name, cutoff or a parameter is invalid.
    """
    match = _SYNTAX.fullmatch(text.strip())
    if match is None:
        raise ValueError(
            f"cannot read measure {text!r}; expected NAME, NAME@k or NAME@k[param=value,...], "
            f"e.g. nDCG@10[gain=exp]; valid names: {measure_names()}"
        )
    try:
        name = _canonical_name(match["name"])
    except ValueError as exc:
        raise ValueError(f"{exc} (in {text!r})") from None
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
            if key not in _KINDS[name].parameters:
                raise ValueError(f"{_not_a_parameter(key, name)} (in {text!r})")
            if key in params:
                raise ValueError(f"parameter {key!r} given twice in {text!r}")
            params[key] = _parse_value(key, token, text)
    try:
        return Measure(name, cutoff, **params)
    except ValueError as exc:
        raise ValueError(f"{exc} (in {text!r})") from None

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rerankeval.eval.measures import Measure, as_measure, parse_measure

PARAMS = {
    "Success": ("rel", "judged_only"),
    "P": ("rel", "judged_only"),
    "R": ("rel", "judged_only"),
    "Rprec": ("rel", "judged_only"),
    "RR": ("rel", "judged_only"),
    "AP": ("rel", "judged_only"),
    "DCG": ("gain", "judged_only"),
    "nDCG": ("gain", "idcg", "judged_only"),
    "Bpref": ("rel",),
    "Judged": (),
    "CandidateRecall": ("rel",),
    "Coverage": ("rel",),
}
NO_CUTOFF = {"Rprec", "Bpref"}
VALUES = {
    "gain": st.sampled_from(["linear", "exp"]),
    "idcg": st.sampled_from(["qrels", "candidates"]),
    "rel": st.integers(1, 5),
    "judged_only": st.booleans(),
}


@st.composite
def measures(draw):
    name = draw(st.sampled_from(sorted(PARAMS)))
    cutoff = None if name in NO_CUTOFF else draw(st.none() | st.integers(1, 1000))
    params = {p: draw(VALUES[p]) for p in PARAMS[name] if draw(st.booleans())}
    return Measure(name, cutoff, **params)


@given(measures())
def test_the_canonical_string_round_trips(measure):
    assert parse_measure(str(measure)) == measure
    assert str(parse_measure(str(measure))) == str(measure)


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("nDCG@10", "nDCG@10"),
        ("NDCG@10", "nDCG@10"),
        ("ndcg@10", "nDCG@10"),
        ("MRR@10", "RR@10"),
        ("mrr", "RR"),
        ("MAP@100", "AP@100"),
        ("MAP", "AP"),
        ("Hit@5", "Success@5"),
        ("hit@5", "Success@5"),
        ("nDCG@10[idcg=candidates,gain=exp]", "nDCG@10[gain=exp,idcg=candidates]"),
        ("nDCG@10[ gain = exp ]", "nDCG@10[gain=exp]"),
        ("P@10[judged_only=True,rel=2]", "P@10[rel=2,judged_only=true]"),
        ("nDCG@10[gain=linear,idcg=qrels]", "nDCG@10"),  # defaults are not listed
        ("Bpref[rel=2]", "Bpref[rel=2]"),
        ("coverage@100", "Coverage@100"),
    ],
)
def test_aliases_and_parameters_normalise_to_the_canonical_string(text, canonical):
    assert str(parse_measure(text)) == canonical


def test_default_measure_prints_as_trec_eval_and_fields_are_the_conventions():
    measure = parse_measure("nDCG@10")
    assert (measure.name, measure.cutoff, measure.gain, measure.idcg, measure.rel, measure.judged_only) == (
        "nDCG", 10, "linear", "qrels", 1, False
    )
    assert str(Measure("nDCG", 10, gain="exp", idcg="candidates")) == "nDCG@10[gain=exp,idcg=candidates]"


def test_measures_are_immutable_hashable_values():
    measure = parse_measure("AP@100")
    with pytest.raises(dataclasses.FrozenInstanceError):
        measure.cutoff = 5
    assert {parse_measure("MAP@100"), measure, Measure("AP", 100)} == {measure}
    assert as_measure("MRR@10") == as_measure(Measure("RR", 10))


@pytest.mark.parametrize(
    "text, message",
    [
        ("RR@10[gain=exp]", "parameter 'gain' does not apply to RR; RR takes: rel, judged_only"),
        ("nDCG@10[rel=2]", "parameter 'rel' does not apply to nDCG"),
        ("Judged@10[judged_only=true]", "Judged takes: no parameters"),
        ("Bpref[judged_only=true]", "parameter 'judged_only' does not apply to Bpref"),
        ("foo@10", "unknown measure 'foo'"),
        ("nDCG@0", "bad cutoff '0'"),
        ("nDCG@-1", "bad cutoff '-1'"),
        ("nDCG@ten", "bad cutoff 'ten'"),
        ("Rprec@10", "Rprec takes no cutoff"),
        ("nDCG@10[color=red]", "unknown parameter 'color'"),
        ("nDCG@10[gain=square]", "gain must be one of linear, exp, got 'square'"),
        ("nDCG@10[idcg=run]", "idcg must be one of qrels, candidates, got 'run'"),
        ("P@10[rel=0]", "rel must be an integer >= 1"),
        ("P@10[rel=high]", "rel must be an integer in 'P@10[rel=high]', got 'high'"),
        ("P@10[judged_only=yes]", "judged_only must be true or false"),
        ("P@10[rel=2,rel=3]", "parameter 'rel' given twice"),
        ("P@10[rel]", "bad parameter 'rel'"),
        ("nDCG 10", "cannot read measure 'nDCG 10'"),
        ("", "cannot read measure ''"),
    ],
)
def test_bad_measures_raise_naming_the_bad_token(text, message):
    with pytest.raises(ValueError) as raised:
        parse_measure(text)
    assert message in str(raised.value)


def test_an_unknown_name_lists_the_valid_names():
    with pytest.raises(ValueError) as raised:
        parse_measure("NDGC@10")
    for name in ["Success (alias Hit)", "RR (alias MRR)", "AP (alias MAP)", "nDCG", "Bpref", "Judged",
                 "CandidateRecall", "Coverage"]:
        assert name in str(raised.value)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"name": "RR", "cutoff": 10, "gain": "exp"}, "parameter 'gain' does not apply to RR"),
        ({"name": "nDCG", "cutoff": 0}, "cutoff must be an integer >= 1"),
        ({"name": "nDCG", "cutoff": 2.5}, "cutoff must be an integer >= 1"),
        ({"name": "nDCG", "cutoff": True}, "cutoff must be an integer >= 1"),
        ({"name": "P", "cutoff": 5, "rel": 0}, "rel must be an integer >= 1"),
        ({"name": "P", "cutoff": 5, "judged_only": "yes"}, "judged_only must be True or False"),
        ({"name": "Bpref", "cutoff": 5}, "Bpref takes no cutoff"),
        ({"name": "Precision", "cutoff": 5}, "unknown measure 'Precision'"),
    ],
)
def test_the_constructor_validates_like_the_parser(kwargs, message):
    with pytest.raises(ValueError) as raised:
        Measure(**kwargs)
    assert message in str(raised.value)


def test_the_constructor_normalises_aliases():
    assert Measure("MRR", 10) == Measure("RR", 10)
    assert Measure("ndcg", 5).name == "nDCG"

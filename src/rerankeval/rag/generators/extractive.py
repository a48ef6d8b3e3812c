"""The offline default generator: deterministic extraction from the context, no model.

Method (a lexical sliding-window baseline in the spirit of the SQuAD paper's baselines; honest, not a reader model):

1. Every context passage is cut into sentences (``. ! ?`` followed by space, or a line break).
2. A sentence's evidence score is the IDF-weighted share of the question's content tokens it contains:
   ``sum(idf(t) for t in Q & S) / sum(idf(t) for t in Q)`` in [0, 1], with ``rerankeval.retrieval.text.tokenize``
   tokens (latin words, Hangul character bigrams), question words (what, how, 무엇, 어떻게, ...) left out, and BM25's
   IDF over the snapshot's corpus. The best sentence wins; ties go to the earlier context passage, then sentence.
3. ``unit: sentence`` answers that sentence. ``unit: span`` answers the run of consecutive sentence words that match
   no question token (runs end at , ; : and brackets) closest to the question words it does match: each run scores
   ``sum(1 / (1 + distance to a matched word))``; a run longer than ``max_span_words`` keeps its best window; leading
   and trailing function words and a Korean particle on the last word are dropped; when the question asks for a
   number or a date (how many, when, 몇, 언제, ...) a window holding a digit scores double. No run: the sentence.
   Measured on the first 400 train questions of korquad-a / squad-sb50 with the gold paragraph as the context:
   answer F1 0.26 / 0.16, EM 0.12 / 0.05 (whole sentences: F1 0.12 / 0.10, EM 0).
4. It cites the passage the sentence came from, and abstains ("cannot answer") when the evidence score is below
   ``abstain_below``: a fixed value, or (``null``) the threshold that maximises mean AnswerF1 (SQuAD 2.0 convention:
   abstaining on an unanswerable query scores 1) on the calibration split, with contexts selected from the fused
   order by the same select rule. Ties choose the lowest threshold.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from ...eval.measures.answers import token_f1
from ...retrieval.text import ENGLISH_STOPWORDS, tokenize
from ..claims import sentences
from . import register_generator
from .base import BuildContext, Example, Generated, Generator, GeneratorConfig

CANNOT_ANSWER = "cannot answer"
QUESTION_WORDS = frozenset("""what which who whom whose when where why how does do did can could should would shall
    may might must has have had we you i me my our your us please tell explain mean means""".split())
KOREAN_QUESTION_BIGRAMS = frozenset("""무엇 엇을 엇인 엇이 어떻 떻게 떤가 어떤 언제 누구 구인 구가 어디 디에
    어느 얼마 마나 인가 나요 가요 까요 는가 은가 인지 알려 려주 주세 세요 해요 나요""".split())
FUNCTION_WORDS = ENGLISH_STOPWORDS | frozenset("also was were been being has have had its which who whom from".split())
KOREAN_PARTICLES = ("에서는", "에게서", "으로는", "으로서", "이라고", "에서", "에게", "으로", "까지", "부터", "처럼",
                    "보다", "라고", "께서", "이다", "은", "는", "이", "가", "을", "를", "의", "에", "로", "와", "과",
                    "도", "만")
NUMERIC_QUESTION = re.compile(r"how many|how much|how long|when|what year|which year|몇|얼마|언제", re.IGNORECASE)
_CLAUSE_END = (",", ";", ":", ")", "]", "»", "》", "」")
_CLAUSE_START = ("(", "[", "«", "《", "「")
_STRIP = "\"'`“”‘’.,;:!?()[]{}<>«»《》「」"


class ExtractiveConfig(GeneratorConfig):
    kind: Literal["extractive"] = "extractive"
    unit: Literal["span", "sentence"] = "span"
    max_span_words: int = Field(8, ge=1)
    abstain_below: float | None = Field(None, ge=0, le=1)
    """Evidence threshold; None: calibrated on the calibration split (``rag.calibration_split``)."""


def content_tokens(text: str) -> set[str]:
    return {token for token in tokenize(text) if token not in QUESTION_WORDS and token not in KOREAN_QUESTION_BIGRAMS}


@register_generator("extractive", ExtractiveConfig)
class ExtractiveGenerator(Generator):
    calibrated = True

    def __init__(self, config: ExtractiveConfig, context: BuildContext):
        self.config = config
        frequencies: Counter = Counter()
        for text in context.corpus_texts:
            frequencies.update(set(tokenize(text)))
        n = len(context.corpus_texts)
        self._df, self._n = frequencies, n
        self.threshold = config.abstain_below
        if self.threshold is None:
            self.threshold = float(context.calibration.get("abstain_below", 0.0))

    def idf(self, token: str) -> float:
        df = self._df.get(token, 0)
        return math.log(1.0 + (self._n - df + 0.5) / (df + 0.5))

    def describe(self) -> dict[str, Any]:
        return {**self.config.to_dict(), "abstain_below": self.threshold, "corpus_passages": self._n}

    def best_sentence(self, question: str, passages: Sequence[str]) -> tuple[float, int, str, set[str]]:
        """(evidence, passage index, sentence, question tokens) of the best sentence; evidence 0 when none."""
        wanted = content_tokens(question)
        # fsum: exactly rounded whatever the order, and a set's order changes with each process's hash seed (a plain
        # sum made a tie between two passages go either way, so answers differed between reruns).
        total = math.fsum(self.idf(t) for t in wanted)
        best = (0.0, -1, "", wanted)
        for index, passage in enumerate(passages):
            for sentence in sentences(passage):
                found = wanted & set(tokenize(sentence))
                score = math.fsum(self.idf(t) for t in found) / total if total else 0.0
                if score > best[0]:
                    best = (score, index, sentence, wanted)
        return best

    def answer_text(self, sentence: str, wanted: set[str], question: str) -> str:
        if self.config.unit == "sentence":
            return sentence
        return extract_span(sentence, wanted, self.config.max_span_words, question) or sentence

    def generate(self, question: str, passages: Sequence[str]) -> Generated:
        evidence, index, sentence, wanted = self.best_sentence(question, passages)
        if index < 0 or evidence < self.threshold:
            return Generated(CANNOT_ANSWER, True, (), round(evidence, 6))
        return Generated(self.answer_text(sentence, wanted, question), False, (index,), round(evidence, 6))

    def calibrate(self, examples: Sequence[Example]) -> dict[str, Any]:
        scored = []
        for example in examples:
            evidence, index, sentence, wanted = self.best_sentence(example.question, example.passages)
            f1 = 0.0
            if example.answerable and index >= 0:
                answer = self.answer_text(sentence, wanted, example.question)
                f1 = max((token_f1(answer, gold) for gold in example.answers), default=0.0)
            scored.append((evidence, f1, example.answerable))
        if not scored:
            return {"abstain_below": 0.0, "examples": 0, "note": "no calibration queries with gold answers: "
                                                                 "never abstains"}
        candidates = sorted({0.0} | {round(evidence, 6) for evidence, _, _ in scored})

        def mean_f1(threshold: float) -> float:
            return sum((f1 if answerable else 0.0) if evidence >= threshold else float(not answerable)
                       for evidence, f1, answerable in scored) / len(scored)

        values = [mean_f1(threshold) for threshold in candidates]
        best = max(range(len(candidates)), key=lambda i: (values[i], -i))
        return {"abstain_below": candidates[best], "examples": len(scored),
                "unanswerable": sum(not answerable for _, _, answerable in scored),
                "train_answer_f1": round(values[best], 6), "train_answer_f1_never_abstaining": round(values[0], 6)}


def extract_span(sentence: str, wanted: set[str], max_words: int, question: str = "") -> str:
    """The answer span of a sentence (module docstring, step 3); "" when every word matches the question."""
    words = sentence.split()
    matched = [bool(set(tokenize(word.strip(_STRIP))) & wanted) for word in words]
    runs, current = [], []
    for i, word in enumerate(words):
        if word.startswith(_CLAUSE_START) and current:
            runs.append(current)
            current = []
        if matched[i] or not word.strip(_STRIP):
            if current:
                runs.append(current)
            current = []
        else:
            current.append(i)
        if word.endswith(_CLAUSE_END) and current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    anchors = [i for i, hit in enumerate(matched) if hit]
    if not anchors:
        return ""

    def closeness(window: list[int]) -> float:
        return sum(1.0 / (1 + min(abs(a - i) for i in window)) for a in anchors)

    numeric = bool(NUMERIC_QUESTION.search(question))
    best, best_score = [], 0.0
    for run in runs:
        run = _trim(run, words)
        for length in range(1, min(max_words, len(run)) + 1):
            for start in range(len(run) - length + 1):
                window = run[start: start + length]
                score = closeness(window)
                if numeric and any(ch.isdigit() for i in window for ch in words[i]):
                    score *= 2.0
                if score > best_score:
                    best, best_score = window, score
    if not best:
        return ""
    text = " ".join(words[i] for i in best).strip(_STRIP)
    return _strip_particle(text)


def _trim(run: list[int], words: list[str]) -> list[int]:
    while run and words[run[0]].strip(_STRIP).lower() in FUNCTION_WORDS:
        run = run[1:]
    while run and words[run[-1]].strip(_STRIP).lower() in FUNCTION_WORDS:
        run = run[:-1]
    return run


def _strip_particle(text: str) -> str:
    head, _, last = text.rpartition(" ")
    if last and "\uac00" <= last[-1] <= "\ud7a3":
        for particle in KOREAN_PARTICLES:
            if last.endswith(particle) and len(last) > len(particle):
                last = last[: -len(particle)]
                break
    return f"{head} {last}".strip()

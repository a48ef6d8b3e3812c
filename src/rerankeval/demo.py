"""Deterministic generator for the bundled demo collection: a bilingual (Korean/English) support knowledge base.

The collection is built to give rerankers something to do. Its traps are the ones real support search falls into:

* near-twin error codes: adjacent codes written from one template that differ in the condition and carry the
  opposite rule ("PAY-1042: never retry automatically" next to "PAY-1041: retry at most twice");
* price lists whose numbers swap between tiers and between years (2023 Pro = 30 days, 2024 Basic = 30 days);
* versioned manuals where the older model's page is outdated for the newer one (Orion S1 vs S2);
* policies whose answer needs several conditions from several pages (admin roles + SSO + emergency recovery);
* Markdown tables and code snippets, Korean, English and mixed pages, and code-switched questions.

Everything is written out by hand-sized data tables plus a few template functions, and made reproducible with a single
``random.Random(seed)``: no set iteration, no hashing, no clock. ``write_beir`` writes the BEIR layout byte for byte
the same on every run, which is what ``tests/test_demo_collection.py`` checks against ``datasets/demo``.

Grades follow one scale everywhere: 3 answers the question, 2 answers part of it (or needs another passage),
1 is on topic without answering (the twin code, the outdated manual), 0 is a judged hard negative. Whenever an error
page answers, its twin page is judged too. Release notes, error-code index tables and troubleshooting checklists are
never judged although they rank high lexically: they are the deliberate holes in the judgments. Translations in a
language the question is not written in are judged only when the question names an identifier or is code-switched
(see ``_reachable_languages``), as a pooled assessment would have found them.
"""

from __future__ import annotations

import json
import os
import random
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

DEFAULT_SEED = 13
TEST_FRACTION = 0.45  # of each (intent, language) cell; 94 test and 116 train questions with the default seed

EN, KO, CS = "en", "ko", "ko_en_code_switch"  # query languages
KO_EN = "ko_en"  # document language of Korean pages written with many English terms (Keystone)
QUERY_LANGUAGES = (KO, EN, CS)
INTENTS = ("exact_id", "troubleshooting", "temporal", "comparison", "multi_hop")
SPLITS = ("train", "test")
# Document types that are never judged although they share many words with the questions.
UNJUDGED_DOC_TYPES = ("error_index", "release_note", "checklist")


@dataclass(frozen=True)
class DemoCollection:
    """BEIR-shaped records plus the bookkeeping the tests need (not written to disk)."""

    corpus: list[dict]
    queries: list[dict]
    qrels: dict[str, list[tuple[str, str, int]]]  # split -> (query-id, corpus-id, grade), sorted
    twin_parents: dict[str, str] = field(default_factory=dict)  # parent id -> parent id of its near-twin page


class Q(NamedTuple):
    """A question and its judgments: (topic, section or None for every section, grade)."""

    language: str
    intent: str
    text: str
    judgments: tuple[tuple[str, str | None, int], ...]


# ---------------------------------------------------------------------------------------------------------------------
# Error codes. Listed in twin pairs: same product, adjacent numbers, same page layout, opposite handling.
# ---------------------------------------------------------------------------------------------------------------------


class ErrorCode(NamedTuple):
    product: str
    code: str
    status: str  # HTTP status or log level, used in the example snippet
    name: dict[str, str]  # per page language
    overview: dict[str, str]
    fix: dict[str, str]
    symptom: tuple[str, str]  # (query language, how a user describes it without naming the code)


ERROR_CODES: tuple[ErrorCode, ...] = (
    # --- PayLink: payment gateway, English pages with Korean translations ---
    ErrorCode(
        "PayLink", "PAY-1041", "504",
        name={EN: "Issuer timeout", KO: "발급사 응답 시간 초과"},
        overview={
            EN: "PAY-1041 means the card issuer did not answer the authorization request in time: no approval "
                "arrived within 15 seconds. The payment stays `pending`, no funds are held on the card, and the "
                "issuer's reason field `decline_code` stays empty. It is most common during issuer maintenance "
                "windows between 00:00 and 02:00 KST.",
            KO: "PAY-1041은 카드 발급사가 승인 요청에 제시간에 응답하지 않았다는 뜻입니다. 15초 안에 승인 결과가 오지 않아 결제는 `pending` 상태로 남고, 카드에 금액이 "
                "홀드되지 않으며, 사유 필드 `decline_code`는 비어 있습니다. 주로 발급사 점검 시간대(새벽 0시~2시)에 발생합니다.",
        },
        fix={
            EN: "How to handle PAY-1041: you may retry the charge automatically, at most twice, waiting 2 seconds "
                "and then 8 seconds. Send the same `Idempotency-Key` with every attempt so that a late approval "
                "cannot charge the customer twice. If the last attempt fails too, mark the order as failed and ask "
                "the customer to try again later.",
            KO: "PAY-1041 처리 방법: 결제를 자동으로 재시도해도 되지만 최대 2번까지만, 2초와 8초 간격으로 보내세요. 매번 같은 `Idempotency-Key`를 보내야 늦게 도착한 "
                "승인 때문에 고객에게 이중 결제가 생기지 않습니다. 마지막 시도도 실패하면 주문을 실패 처리하고 고객에게 잠시 후 다시 결제하도록 안내하세요.",
        },
        symptom=(EN, "Around midnight some card payments hang and then come back failed because the bank never "
                     "responded. Is it fine for our server to send them again by itself?"),
    ),
    ErrorCode(
        "PayLink", "PAY-1042", "402",
        name={EN: "Issuer hard decline", KO: "발급사 최종 거절"},
        overview={
            EN: "PAY-1042 means the card issuer did answer the authorization request, with a final (hard) decline: "
                "the card was reported stolen, the account is closed or the issuer said do-not-honor. The payment is "
                "`failed`, no funds are held on the card, and the issuer's reason is in the field `decline_code`. It "
                "can happen at any time of day.",
            KO: "PAY-1042는 카드 발급사가 승인 요청에 응답했지만 최종 거절(hard decline)했다는 뜻입니다. 분실·도난 신고 카드, 해지된 계좌, do-not-honor 응답 등이 "
                "원인이며, 결제는 `failed` 상태가 되고, 카드에 금액이 홀드되지 않으며, 사유는 `decline_code` 필드에 담깁니다. 시간대와 관계없이 발생합니다.",
        },
        fix={
            EN: "How to handle PAY-1042: never retry the charge automatically, not even once, because repeated "
                "attempts on a hard decline raise your fraud score and can bring card-network penalties. Do not show "
                "the customer the `decline_code`. Mark the order as failed and ask the customer to try again with a "
                "different card.",
            KO: "PAY-1042 처리 방법: 결제를 자동으로 재시도하면 안 되며 한 번도 다시 보내지 마세요. 최종 거절 건을 반복 요청하면 가맹점 사기 점수가 올라가고 카드사 페널티를 받을 수 "
                "있습니다. 고객에게 `decline_code`를 보여 주지 말고, 주문을 실패 처리한 뒤 다른 카드로 다시 결제하도록 안내하세요.",
        },
        symptom=(CS, "PayLink 결제에서 고객 카드가 은행 쪽에서 완전히 거절됐어요. checkout에서 자동으로 다시 charge 시도해도 괜찮나요?"),
    ),
    ErrorCode(
        "PayLink", "PAY-2030", "200",
        name={EN: "Idempotent replay", KO: "멱등 요청 재전송"},
        overview={
            EN: "PAY-2030 means PayLink received a request with an `Idempotency-Key` it has already processed, and "
                "the request body is identical to the first one. The API does not create a new payment; it replays "
                "the stored response with HTTP 200 and the header `Idempotent-Replayed: true`.",
            KO: "PAY-2030은 이미 처리한 `Idempotency-Key`로 요청이 다시 들어왔고, 요청 본문도 처음 요청과 똑같다는 뜻입니다. API는 새 결제를 만들지 않고 저장해 둔 "
                "응답을 HTTP 200과 `Idempotent-Replayed: true` 헤더로 그대로 돌려줍니다.",
        },
        fix={
            EN: "How to handle PAY-2030: nothing is wrong, so no action is needed. Treat the replayed response "
                "exactly like the original and keep the same key for further retries of that operation. Keys are "
                "stored for 24 hours; after that the same key starts a new operation.",
            KO: "PAY-2030 처리 방법: 문제가 없는 상황이므로 조치할 필요가 없습니다. 재전송된 응답을 최초 응답과 똑같이 처리하고, 같은 작업을 다시 시도할 때도 같은 키를 계속 쓰세요. "
                "키는 24시간 보관되며 그 이후에는 같은 키도 새 작업으로 취급됩니다.",
        },
        symptom=(KO, "PayLink에 결제 요청을 실수로 두 번 보냈는데 두 번째에는 결제가 새로 생기지 않고 첫 응답이 똑같이 왔어요. 뭔가 잘못된 건가요?"),
    ),
    ErrorCode(
        "PayLink", "PAY-2031", "409",
        name={EN: "Idempotency key conflict", KO: "멱등 키 충돌"},
        overview={
            EN: "PAY-2031 means PayLink received a request with an `Idempotency-Key` it has already processed, but "
                "the request body differs from the first one, for example a changed amount or currency. The API does "
                "not create a new payment; it rejects the request with HTTP 409 so that one key never stands for two "
                "payments.",
            KO: "PAY-2031은 이미 처리한 `Idempotency-Key`로 요청이 다시 들어왔는데, 요청 본문이 처음 요청과 다르다는 뜻입니다(금액이나 통화 변경 등). API는 새 결제를 "
                "만들지 않고 HTTP 409로 요청을 거부해 하나의 키가 두 결제를 가리키지 않게 합니다.",
        },
        fix={
            EN: "How to handle PAY-2031: something is wrong, so do not resend with the same key. Find the code that "
                "rebuilds the body between retries (recalculated totals and timestamps are typical) and freeze the "
                "payload before the first attempt. Use a new key only when you really mean to start a new payment.",
            KO: "PAY-2031 처리 방법: 문제가 있는 상황이므로 같은 키로 다시 보내지 마세요. 재시도 사이에 본문을 다시 만드는 코드(합계 재계산, 타임스탬프 갱신 등)를 찾아 첫 시도 "
                "전에 페이로드를 고정하세요. 새 키는 정말로 새 결제를 시작할 때만 쓰세요.",
        },
        symptom=(EN, "Our retry logic recomputes the order total before sending again, and now the second attempt "
                     "is refused as a conflict. How should we fix the retries?"),
    ),
    ErrorCode(
        "PayLink", "PAY-3107", "422",
        name={EN: "Refund exceeds captured amount", KO: "환불 금액 초과"},
        overview={
            EN: "PAY-3107 means the refund was rejected because of its amount: it is larger than what is still "
                "refundable on the payment, that is the captured amount minus earlier partial refunds. It also "
                "appears when the refund currency differs from the capture currency.",
            KO: "PAY-3107은 환불 금액 때문에 환불이 거부되었다는 뜻입니다. 요청 금액이 해당 결제의 환불 가능 잔액, 즉 매입 금액에서 이전 부분 환불을 뺀 금액보다 큽니다. 환불 통화가 "
                "매입 통화와 다를 때도 나옵니다.",
        },
        fix={
            EN: "How to handle PAY-3107: send the refund again through the API with a lower amount, at most the "
                "`refundable_amount` returned by `GET /v1/payments/{id}`. A payment can take up to 10 partial "
                "refunds; anything beyond the captured amount must go out as a separate credit.",
            KO: "PAY-3107 처리 방법: 금액을 낮춰 API로 다시 환불을 요청하세요. 금액은 `GET /v1/payments/{id}` 응답의 `refundable_amount` 이하여야 "
                "합니다. 한 결제는 최대 10번까지 부분 환불할 수 있고, 매입액을 넘는 금액은 별도 적립금으로 지급해야 합니다.",
        },
        symptom=(CS, "PayLink에서 partial refund 몇 번 한 뒤에 남은 금액보다 크게 환불 요청하니까 거절돼요. 어떻게 처리해야 하죠?"),
    ),
    ErrorCode(
        "PayLink", "PAY-3108", "422",
        name={EN: "Refund window closed", KO: "환불 가능 기간 만료"},
        overview={
            EN: "PAY-3108 means the refund was rejected because of its date: card refunds through the API are only "
                "accepted within 180 days of capture, and that window has closed. After it, the card networks no "
                "longer route a refund to the original card.",
            KO: "PAY-3108은 환불 날짜 때문에 환불이 거부되었다는 뜻입니다. API 카드 환불은 매입 후 180일 이내에만 접수되는데 그 기간이 지났습니다. 이후에는 카드사가 원래 카드로 "
                "환불을 보내지 않습니다.",
        },
        fix={
            EN: "How to handle PAY-3108: do not send the refund again through the API; it is rejected whatever the "
                "amount. Issue a manual credit by bank transfer under Payments → Manual credit, which a user with "
                "the Finance role must approve, and put the original payment id in the memo.",
            KO: "PAY-3108 처리 방법: API로 다시 환불을 요청하지 마세요. 금액과 관계없이 거부됩니다. 결제 → 수동 환급 메뉴에서 계좌 이체로 환급하고, Finance 역할 사용자의 "
                "승인을 받은 뒤 메모에 원 결제 ID를 남기세요.",
        },
        symptom=(KO, "PayLink로 결제한 지 7개월 지난 주문을 돌려주려는데 API가 받아 주지 않습니다. 고객에게 돈을 돌려줄 다른 방법이 있나요?"),
    ),
    ErrorCode(
        "PayLink", "PAY-4401", "warning",
        name={EN: "Webhook endpoint timeout", KO: "웹훅 엔드포인트 응답 지연"},
        overview={
            EN: "PAY-4401 is written to the webhook delivery log when your endpoint did not answer with a 2xx status "
                "within 10 seconds. PayLink reads a timeout as a temporary problem; the event itself was created "
                "normally.",
            KO: "PAY-4401은 가맹점 엔드포인트가 10초 안에 2xx 상태로 응답하지 않았을 때 웹훅 전송 로그에 남습니다. PayLink는 시간 초과를 일시적인 문제로 보며, 이벤트 자체는 "
                "정상적으로 생성되었습니다.",
        },
        fix={
            EN: "How to handle PAY-4401: PayLink redelivers the event automatically, up to 5 times over 24 hours, so "
                "you do not need to request a resend. Answer webhooks with a fast 2xx, move slow work to a "
                "background queue and use the event id to skip duplicates.",
            KO: "PAY-4401 처리 방법: PayLink가 이벤트를 24시간 동안 최대 5번 자동으로 재전송하므로 따로 재전송을 요청할 필요가 없습니다. 웹훅에는 빠르게 2xx로 응답하고, "
                "오래 걸리는 작업은 백그라운드 큐로 넘기며, 중복은 이벤트 ID로 걸러 내세요.",
        },
        symptom=(EN, "Our callback receiver needs about 20 seconds per event and the dashboard marks those "
                     "deliveries as timed out. Will we lose them unless we ask for a resend?"),
    ),
    ErrorCode(
        "PayLink", "PAY-4402", "error",
        name={EN: "Webhook endpoint gone", KO: "웹훅 엔드포인트 삭제됨"},
        overview={
            EN: "PAY-4402 is written to the webhook delivery log when your endpoint answered with HTTP 410 Gone. "
                "PayLink reads 410 as a permanent signal that the endpoint was removed; the event itself was created "
                "normally.",
            KO: "PAY-4402는 가맹점 엔드포인트가 HTTP 410 Gone으로 응답했을 때 웹훅 전송 로그에 남습니다. PayLink는 410을 엔드포인트가 삭제되었다는 영구적인 신호로 "
                "보며, 이벤트 자체는 정상적으로 생성되었습니다.",
        },
        fix={
            EN: "How to handle PAY-4402: PayLink never redelivers the event and disables the endpoint, so later "
                "events stop too. Re-enable the endpoint under Dashboard → Developers → Webhooks and use 'Replay "
                "events' for the last 7 days. During maintenance answer 503, never 410.",
            KO: "PAY-4402 처리 방법: PayLink는 이벤트를 다시 보내지 않고 엔드포인트를 비활성화하므로 이후 이벤트도 오지 않습니다. 대시보드 → 개발자 → 웹훅에서 엔드포인트를 다시 "
                "활성화하고 '이벤트 재전송'으로 최근 7일 치를 받으세요. 점검 중에는 410이 아니라 503으로 응답해야 합니다.",
        },
        symptom=(CS, "점검하는 동안 우리 webhook 서버가 PayLink에 410을 돌려줬더니 그 뒤로 이벤트가 하나도 안 와요. 어떻게 살리나요?"),
    ),
    # --- Orion: edge server appliance, Korean pages with English translations ---
    ErrorCode(
        "Orion", "ORN-E210", "warning",
        name={KO: "흡기 온도 경고", EN: "Inlet temperature warning"},
        overview={
            KO: "ORN-E210은 흡기 온도가 모델별 경고 임계값(설치 설명서 참고)을 넘었다는 뜻입니다. 장비는 계속 동작하면서 CPU 클럭을 낮추고, 전면 상태 LED는 주황색으로 "
                "깜박입니다.",
            EN: "ORN-E210 means the inlet temperature crossed the warning threshold for your model (see the "
                "installation manual). The unit keeps running but lowers the CPU clock, and the front status LED "
                "blinks amber.",
        },
        fix={
            KO: "ORN-E210 조치 방법: 장비 전원을 끄지 마세요. 전원을 내리면 팬도 멈춰 내부가 더 뜨거워집니다. 먼지 필터와 랙 앞뒤 공기 흐름을 점검하세요. 온도가 5분 이상 임계값 "
                "아래로 유지되면 경고는 저절로 해제됩니다.",
            EN: "How to handle ORN-E210: do not power the unit off, because that also stops the fans and makes the "
                "inside hotter. Check the dust filter and the airflow in front of and behind the rack; the warning "
                "clears by itself once the temperature has stayed below the threshold for 5 minutes.",
        },
        symptom=(KO, "서버실이 더워지면서 Orion 장비 앞 불빛이 주황색으로 깜빡이고 느려졌어요. 일단 전원부터 내려야 할까요?"),
    ),
    ErrorCode(
        "Orion", "ORN-E211", "critical",
        name={KO: "흡기 온도 위험", EN: "Inlet temperature critical"},
        overview={
            KO: "ORN-E211은 흡기 온도가 모델별 위험 임계값(설치 설명서 참고)을 넘었다는 뜻입니다. 장비는 비상 정지(emergency shutdown)를 시작해 정지 지연 시간 뒤 "
                "전원을 차단하고, 전면 상태 LED는 빨간색으로 켜집니다.",
            EN: "ORN-E211 means the inlet temperature crossed the critical threshold for your model (see the "
                "installation manual). The unit starts an emergency shutdown and cuts power after the shutdown "
                "delay, and the front status LED turns solid red.",
        },
        fix={
            KO: "ORN-E211 조치 방법: 장비 전원을 바로 다시 켜지 마세요. 최소 10분 동안 식힌 뒤에 켜야 하며, 원인을 고치지 않으면 부팅 중에 다시 정지합니다. 먼지 필터와 랙 앞뒤 "
                "공기 흐름을 점검하세요. 30일 안에 3번 이상 정지하면 RMA 전에 현장 점검을 받아야 합니다.",
            EN: "How to handle ORN-E211: do not power the unit back on right away. Let it cool for at least 10 "
                "minutes, or it will stop again during boot. Check the dust filter and the airflow in front of and "
                "behind the rack; three shutdowns within 30 days require an on-site inspection before any RMA.",
        },
        symptom=(CS, "Orion 장비가 너무 뜨거워져서 스스로 꺼져 버렸어요. 바로 다시 부팅해도 되나요?"),
    ),
    ErrorCode(
        "Orion", "ORN-E305", "warning",
        name={KO: "PSU 이중화 해제", EN: "PSU redundancy lost"},
        overview={
            KO: "ORN-E305는 이중화된 두 PSU 중 하나가 출력을 잃었다는 뜻입니다. 장비는 남은 PSU로 정상 동작하지만 더 이상 이중화 상태가 아닙니다.",
            EN: "ORN-E305 means one of the two redundant PSUs lost output. The unit keeps running on the remaining "
                "PSU but is no longer redundant.",
        },
        fix={
            KO: "ORN-E305 조치 방법: 장비를 켠 채로 PSU를 교체해도 됩니다(hot-swap). 고장 난 모듈의 레버를 당겨 빼고 새 모듈을 끼우세요. 이중화가 없는 상태이므로 72시간 "
                "안에 교체하세요.",
            EN: "How to handle ORN-E305: you may replace the PSU with the unit running (hot-swap). Pull the lever of "
                "the failed module, slide it out and insert the new one. Without redundancy, replace it within 72 "
                "hours.",
        },
        symptom=(KO, "Orion 전원 모듈 하나가 죽었는데 장비는 아직 돌아가요. 서비스를 멈추지 않고 바꿀 수 있을까요?"),
    ),
    ErrorCode(
        "Orion", "ORN-E306", "warning",
        name={KO: "PSU 펌웨어 불일치", EN: "PSU firmware mismatch"},
        overview={
            KO: "ORN-E306은 이중화된 두 PSU의 펌웨어 버전이 서로 다르다는 뜻입니다. 장비는 정상 동작하지만 버전이 맞춰질 때까지 부하 분산이 꺼집니다. 교체용 PSU가 다른 생산 "
                "배치에서 왔을 때 흔히 생깁니다.",
            EN: "ORN-E306 means the two redundant PSUs run different firmware versions. The unit keeps running but "
                "load sharing is off until the versions match; it usually happens when a replacement PSU came from "
                "another production batch.",
        },
        fix={
            KO: "ORN-E306 조치 방법: 장비를 켠 채로 PSU를 교체하면 안 됩니다(hot-swap 금지). 펌웨어가 다른 모듈을 빼면 남은 모듈이 과부하로 꺼질 수 있습니다. 장비를 정상 "
                "종료한 뒤 관리 콘솔에서 PSU 펌웨어를 같은 버전으로 맞추세요.",
            EN: "How to handle ORN-E306: do not replace a PSU with the unit running (no hot-swap). Pulling a module "
                "with mismatched firmware can overload the remaining one and cut power. Shut the unit down cleanly "
                "and align the PSU firmware from the management console.",
        },
        symptom=(CS, "Orion에 새로 받은 PSU 끼웠더니 두 모듈 firmware version이 다르다고 떠요. 전원 켠 채로 빼도 될까요?"),
    ),
    ErrorCode(
        "Orion", "ORN-E412", "error",
        name={KO: "팬 모듈 미장착", EN: "Fan module missing"},
        overview={
            KO: "ORN-E412는 팬 슬롯 하나가 비어 있거나 팬 모듈이 커넥터에 제대로 꽂히지 않았다는 뜻입니다. 부팅 직후 자체 점검에서 감지됩니다.",
            EN: "ORN-E412 means a fan slot is empty or a fan module is not seated in its connector. The self-test "
                "detects it right after boot.",
        },
        fix={
            KO: "ORN-E412 조치 방법: 장비를 끈 뒤 팬 모듈을 슬롯 끝까지 밀어 넣어 딸깍 소리가 나는지 확인하세요. 빈 슬롯으로 운영하면 안 되며, 모듈이 빠진 채 5분이 지나면 장비가 "
                "스스로 정지합니다.",
            EN: "How to handle ORN-E412: power the unit off and push the fan module fully into its slot until it "
                "clicks. Never run with an empty fan slot: five minutes after a module goes missing the unit shuts "
                "itself down.",
        },
        symptom=(KO, "Orion 켤 때마다 냉각팬 하나가 없다는 경고가 떠요. 그냥 계속 써도 괜찮나요?"),
    ),
    ErrorCode(
        "Orion", "ORN-E413", "warning",
        name={KO: "팬 회전 속도 저하", EN: "Fan speed low"},
        overview={
            KO: "ORN-E413은 팬 슬롯에 팬 모듈이 꽂혀 있지만 회전 속도가 기준치의 60% 아래로 떨어졌다는 뜻입니다. 운영 중 감시에서 감지되며 베어링 마모나 먼지가 흔한 원인입니다.",
            EN: "ORN-E413 means a fan module is seated in its slot but spins below 60% of its expected speed. "
                "Runtime monitoring detects it; worn bearings and dust are the usual causes.",
        },
        fix={
            KO: "ORN-E413 조치 방법: 팬 hot-swap을 지원하는 모델이라면 장비를 켠 채로 팬 모듈을 교체하되 30초 안에 끝내세요. 새 팬이 올 때까지는 팬 모드를 '성능'으로 올려 "
                "남은 팬이 더 빨리 돌게 하세요.",
            EN: "How to handle ORN-E413: on models with hot-swappable fans, replace the fan module with the unit "
                "running, but finish within 30 seconds. Until the new fan arrives, set the fan mode to Performance "
                "so the remaining fans spin faster.",
        },
        symptom=(EN, "One fan on our Orion box reports a very low RPM. Can we swap it without shutting the unit "
                     "down?"),
    ),
    ErrorCode(
        "Orion", "ORN-E520", "error",
        name={KO: "펌웨어 서명 검증 실패", EN: "Firmware signature invalid"},
        overview={
            KO: "ORN-E520은 펌웨어 업데이트가 서명 검증 단계에서 실패했다는 뜻입니다. 이미지가 변조되었거나 다른 모델용이며, 장비는 기존 펌웨어로 계속 동작합니다.",
            EN: "ORN-E520 means a firmware update failed at the signature check: the image was modified or is meant "
                "for another model. The unit keeps running its current firmware.",
        },
        fix={
            KO: "ORN-E520 조치 방법: 같은 이미지로 다시 시도하지 마세요. 같은 파일을 다시 올리면 보안 잠금이 걸려 24시간 동안 업데이트가 막힙니다. 다운로드 센터에서 모델에 맞는 "
                "이미지를 새로 받아 SHA-256 체크섬을 확인하세요.",
            EN: "How to handle ORN-E520: do not retry with the same image. Uploading the same file again triggers a "
                "security lock that blocks updates for 24 hours. Download a fresh image for your exact model and "
                "check its SHA-256 checksum.",
        },
        symptom=(KO, "Orion 업데이트 이미지를 넣었더니 인증 검사에서 거부됐어요. 똑같은 파일로 몇 번 더 시도해 봐도 될까요?"),
    ),
    ErrorCode(
        "Orion", "ORN-E521", "warning",
        name={KO: "펌웨어 다운로드 중단", EN: "Firmware transfer interrupted"},
        overview={
            KO: "ORN-E521은 펌웨어 업데이트가 전송 단계에서 실패했다는 뜻입니다. 이미지를 받거나 올리는 도중 연결이 끊겼으며, 장비는 기존 펌웨어로 계속 동작합니다.",
            EN: "ORN-E521 means a firmware update failed during transfer: the connection dropped while the image was "
                "downloaded or uploaded. The unit keeps running its current firmware.",
        },
        fix={
            KO: "ORN-E521 조치 방법: 같은 이미지로 최대 3번까지 다시 시도해도 됩니다. 업데이트 중에는 관리 포트를 유선으로 연결하고, 3번 모두 실패하면 USB 복구 절차를 "
                "사용하세요.",
            EN: "How to handle ORN-E521: you may retry with the same image up to 3 times. Use a wired connection to "
                "the management port during the update, and if all three attempts fail, use the USB recovery "
                "procedure.",
        },
        symptom=(CS, "Orion firmware 올리는 중에 네트워크가 끊겼어요. 같은 파일로 다시 upload 해도 안전한가요?"),
    ),
    # --- CloudVault: backup service, English pages only ---
    ErrorCode(
        "CloudVault", "CV-701", "409",
        name={EN: "Snapshot quota exceeded"},
        overview={
            EN: "CV-701 is returned when a snapshot operation is refused because of your plan: creating the snapshot "
                "would exceed the restore points your plan includes. Scheduled backups keep running; manual "
                "snapshots are refused.",
        },
        fix={
            EN: "How to handle CV-701: free up restore points by deleting snapshots you no longer need, or move to a "
                "plan with more restore points. Any workspace admin can delete unlocked snapshots, and the quota "
                "frees up within minutes.",
        },
        symptom=(EN, "Taking a manual backup is refused because we are at the maximum number of restore points for "
                     "our subscription. What can we do?"),
    ),
    ErrorCode(
        "CloudVault", "CV-702", "423",
        name={EN: "Snapshot under retention lock"},
        overview={
            EN: "CV-702 is returned when a snapshot operation is refused because of a retention lock: deleting the "
                "snapshot is blocked until the date shown as `locked_until` in the snapshot details.",
        },
        fix={
            EN: "How to handle CV-702: you cannot free up this snapshot. Nobody can delete it before `locked_until`, "
                "including workspace owners and CloudVault support, so do not open a ticket to force deletion; wait "
                "for the lock to expire or raise the quota instead.",
        },
        symptom=(CS, "CloudVault에서 오래된 snapshot을 지우려는데 잠겨 있다고 삭제가 안 돼요. support에 요청하면 강제로 지워 주나요?"),
    ),
    ErrorCode(
        "CloudVault", "CV-815", "422",
        name={EN: "Restore target too small"},
        overview={
            EN: "CV-815 is returned when a restore is refused because of the target volume's size: it has less free "
                "space than the snapshot's logical size. The restore stops before writing any data.",
        },
        fix={
            EN: "How to handle CV-815: resize the target volume to at least the snapshot's logical size plus 10% and "
                "start the restore again. Restoring into a smaller volume is not supported, even if the data would "
                "fit after compression.",
        },
        symptom=(EN, "Our restore job aborts right away complaining the destination disk lacks space, even though "
                     "the compressed data would fit. Why, and what now?"),
    ),
    ErrorCode(
        "CloudVault", "CV-816", "403",
        name={EN: "Restore target in another region"},
        overview={
            EN: "CV-816 is returned when a restore is refused because of the target volume's region: it lives in a "
                "different region than the snapshot. The restore stops before writing any data.",
        },
        fix={
            EN: "How to handle CV-816: only Enterprise workspaces can restore into another region, and a second "
                "admin must approve each such restore. On other plans, restore inside the snapshot's region and copy "
                "the data yourself; egress fees apply either way.",
        },
        symptom=(CS, "CloudVault에서 Seoul에 있는 snapshot을 Tokyo volume으로 복원하려니까 막혀요. 어떻게 해야 하나요?"),
    ),
    ErrorCode(
        "CloudVault", "CV-920", "401",
        name={EN: "Agent token expired"},
        overview={
            EN: "CV-920 means the backup agent's registration token is no longer valid because it expired: agent "
                "tokens expire automatically 365 days after registration, and backups from that host stop.",
        },
        fix={
            EN: "How to handle CV-920: re-register the agent by running `cv agent register --renew` on the host. The "
                "agent keeps its backup history and policies, and the next scheduled backup runs normally.",
        },
        symptom=(EN, "Backups from one server quietly stopped after about a year and the agent says its credentials "
                     "are too old. How do we get it backing up again?"),
    ),
    ErrorCode(
        "CloudVault", "CV-921", "401",
        name={EN: "Agent token revoked"},
        overview={
            EN: "CV-921 means the backup agent's registration token is no longer valid because an admin revoked it, "
                "usually when the host was decommissioned or suspected to be compromised. Backups from that host "
                "stop.",
        },
        fix={
            EN: "How to handle CV-921: do not re-register the agent. Re-registering a revoked host is blocked for 7 "
                "days and raises a security alert; ask your workspace admin why the token was revoked, since only "
                "they can approve the host again.",
        },
        symptom=(CS, "admin이 CloudVault agent token을 revoke 했다던데 그냥 agent 다시 register 하면 되는 거죠?"),
    ),
    ErrorCode(
        "CloudVault", "CV-033", "500",
        name={EN: "Encryption key not found"},
        overview={
            EN: "CV-033 means CloudVault cannot use the customer-managed encryption key of the backup policy because "
                "the key no longer exists in your KMS (it was deleted, or the key ARN has a typo). New snapshots "
                "cannot be written and existing ones cannot be read.",
        },
        fix={
            EN: "How to handle CV-033: CloudVault cannot recover a deleted key, and snapshots encrypted with it stay "
                "unreadable for good. Point the policy to an existing key for new backups, and check whether your "
                "KMS still lets you cancel the deletion (often within 7 to 30 days).",
        },
        symptom=(EN, "Someone removed our KMS key by accident and now every backup fails. Can CloudVault get the "
                     "old snapshots back?"),
    ),
    ErrorCode(
        "CloudVault", "CV-034", "500",
        name={EN: "Encryption key disabled"},
        overview={
            EN: "CV-034 means CloudVault cannot use the customer-managed encryption key of the backup policy because "
                "the key is disabled in your KMS. New snapshots cannot be written and existing ones cannot be read.",
        },
        fix={
            EN: "How to handle CV-034: re-enable the key in your KMS and no data is lost. Snapshots encrypted with "
                "it become readable again at once, new backups resume on the next run, and there is no need to "
                "re-run the failed backups by hand.",
        },
        symptom=(CS, "KMS에서 key를 disable 해 뒀더니 CloudVault backup이 전부 실패해요. 다시 enable 하면 예전 데이터 살아나요?"),
    ),
    # --- Keystone: identity / SSO console, Korean pages full of English terms ---
    ErrorCode(
        "Keystone", "KS-2107", "401",
        name={KO_EN: "SAML assertion 만료"},
        overview={
            KO_EN: "KS-2107은 IdP가 보낸 SAML assertion을 Keystone이 거부했다는 뜻으로, assertion의 유효 시간(NotOnOrAfter)이 이미 지났기 "
                   "때문입니다. 대부분 IdP 서버와 Keystone 사이의 clock skew가 3분을 넘을 때 생깁니다.",
        },
        fix={
            KO_EN: "KS-2107 처리 방법: 사용자에게 다시 로그인하라고 안내해도 됩니다. 새 assertion이 발급되면 대부분 해결됩니다. 반복된다면 IdP 서버의 NTP 동기화를 "
                   "확인하세요. Keystone 쪽 허용 오차 3분은 늘릴 수 없습니다.",
        },
        symptom=(EN, "Some users get kicked out of SSO login with an expired assertion message; the clock on our "
                     "IdP server may be drifting. Is it fine to tell them to just log in again?"),
    ),
    ErrorCode(
        "Keystone", "KS-2108", "401",
        name={KO_EN: "SAML assertion 재사용"},
        overview={
            KO_EN: "KS-2108은 IdP가 보낸 SAML assertion을 Keystone이 거부했다는 뜻으로, 같은 assertion이 이미 한 번 사용되었기 때문입니다. "
                   "Keystone은 이를 replay attack 가능성으로 보고 security event로 기록합니다.",
        },
        fix={
            KO_EN: "KS-2108 처리 방법: 로그인을 자동으로 다시 시도하지 마세요. 같은 assertion을 다시 보내면 계정이 15분간 잠깁니다. 브라우저 뒤로 가기나 proxy 캐시가 "
                   "원인인지 확인하고, 원인이 불분명하면 Security Admin에게 security event 검토를 요청하세요.",
        },
        symptom=(KO, "Keystone SSO 로그인 도중 뒤로 가기를 누르면 같은 인증 응답이 또 제출됐다는 오류가 나요. 자동으로 다시 로그인 시켜도 되나요?"),
    ),
    ErrorCode(
        "Keystone", "KS-3301", "403",
        name={KO_EN: "MFA device 미등록"},
        overview={
            KO_EN: "KS-3301은 MFA가 필수인 조직에서 사용자가 MFA device 때문에 로그인하지 못했다는 뜻으로, 아직 device를 등록하지 않았기 때문입니다. 첫 로그인 후 7일 "
                   "유예 기간이 끝나면 발생합니다.",
        },
        fix={
            KO_EN: "KS-3301 처리 방법: 사용자가 직접 해결할 수 있으며 관리자가 개입할 필요는 없습니다. 로그인 화면의 'MFA 등록' 링크로 authenticator 앱이나 보안 키를 "
                   "등록하면 됩니다.",
        },
        symptom=(CS, "신규 입사자가 일주일 지나니까 Keystone login이 막혔어요. 인증 앱을 안 깔아서 그런 것 같은데 admin이 뭘 해 줘야 하나요?"),
    ),
    ErrorCode(
        "Keystone", "KS-3302", "423",
        name={KO_EN: "MFA device 잠김"},
        overview={
            KO_EN: "KS-3302는 MFA가 필수인 조직에서 사용자가 MFA device 때문에 로그인하지 못했다는 뜻으로, MFA 코드를 5번 연속 틀려 device가 잠겼기 때문입니다. "
                   "잠금은 30분 뒤 자동으로 풀립니다.",
        },
        fix={
            KO_EN: "KS-3302 처리 방법: 30분 기다리면 풀리며, 급하다면 Security Admin만 MFA reset으로 바로 풀 수 있습니다. Org Admin에게는 이 권한이 "
                   "없습니다. 기기를 잃어버렸다면 영상 통화 신원 확인을 포함한 MFA reset 절차를 따르세요.",
        },
        symptom=(EN, "A user typed the wrong MFA code several times in a row and is now locked out. Can an Org "
                     "Admin unlock them right away?"),
    ),
    ErrorCode(
        "Keystone", "KS-4010", "403",
        name={KO_EN: "Emergency recovery code 사용됨"},
        overview={
            KO_EN: "KS-4010은 입력한 emergency recovery code가 거부되었다는 뜻으로, 그 코드가 이미 사용되었기 때문입니다. 각 코드는 한 번만 쓸 수 있지만 같은 "
                   "세트의 다른 코드는 아직 유효합니다.",
        },
        fix={
            KO_EN: "KS-4010 처리 방법: 같은 세트의 다른 미사용 코드를 입력하세요. 남은 코드가 없다면 Owner가 새 세트(10개)를 발급해야 하며, 새 세트를 발급하면 이전 코드는 "
                   "모두 무효가 됩니다.",
        },
        symptom=(KO, "Keystone 비상용 복구 코드를 넣었더니 이미 쓴 코드라고 나와요. 이제 어떻게 해야 하나요?"),
    ),
    ErrorCode(
        "Keystone", "KS-4011", "403",
        name={KO_EN: "Emergency recovery code 만료"},
        overview={
            KO_EN: "KS-4011은 입력한 emergency recovery code가 거부되었다는 뜻으로, 코드 세트가 발급 후 90일이 지나 만료되었기 때문입니다. 만료된 세트의 코드는 "
                   "사용 여부와 관계없이 모두 거부됩니다.",
        },
        fix={
            KO_EN: "KS-4011 처리 방법: 같은 세트의 다른 코드로는 해결되지 않습니다. Owner가 새 세트를 발급해야 하며, Owner 본인이 잠겨 있다면 Owner 계정 복구 정책에 "
                   "따라 Org Admin 2명의 승인을 받아야 합니다.",
        },
        symptom=(CS, "작년에 받아 둔 Keystone backup code가 전부 거부돼요. 한 번도 안 쓴 code도 안 되는데 왜 그런 거예요?"),
    ),
    ErrorCode(
        "Keystone", "KS-5120", "409",
        name={KO_EN: "SCIM email 중복"},
        overview={
            KO_EN: "KS-5120은 SCIM provisioning 요청이 거부되었다는 뜻으로, 요청의 email이 이미 다른 사용자에게 쓰이고 있기 때문입니다. 보통 수동으로 만든 계정과 "
                   "IdP 계정이 겹칠 때 생깁니다.",
        },
        fix={
            KO_EN: "KS-5120 처리 방법: 재시도해도 계속 실패합니다. 기존 수동 계정을 IdP 계정과 link하거나 비활성화한 뒤 IdP에서 provisioning을 다시 push하세요.",
        },
        symptom=(EN, "SCIM sync from our IdP fails for a few people whose email already belongs to a manually "
                     "created account. Will retrying help?"),
    ),
    ErrorCode(
        "Keystone", "KS-5121", "429",
        name={KO_EN: "SCIM rate limit 초과"},
        overview={
            KO_EN: "KS-5121은 SCIM provisioning 요청이 거부되었다는 뜻으로, SCIM API 호출이 분당 600건 제한을 넘었기 때문입니다. 보통 대량 사용자 동기화 초기에 "
                   "생깁니다.",
        },
        fix={
            KO_EN: "KS-5121 처리 방법: `Retry-After` 헤더에 적힌 시간만큼 기다렸다가 재시도하면 성공합니다. 대부분의 IdP가 자동으로 backoff하므로 따로 할 일은 "
                   "없고, 초기 동기화는 트래픽이 적은 시간에 돌리세요.",
        },
        symptom=(KO, "IdP에서 Keystone으로 사용자 수천 명을 한꺼번에 연동했더니 요청이 너무 많다는 오류가 납니다. 어떻게 처리하면 되나요?"),
    ),
    # --- Relay: messaging API, Korean pages with English translations for foreign developers ---
    ErrorCode(
        "Relay", "RLY-4290", "429",
        name={KO: "초당 발송 한도 초과", EN: "Per-second send limit exceeded"},
        overview={
            KO: "RLY-4290은 발송 한도 때문에 요청이 거부되었다는 뜻으로, 초당 발송 한도를 넘었기 때문입니다. 한도는 요금제마다 다르며, 초과한 요청만 거부되고 이미 접수된 메시지는 정상 "
                "발송됩니다.",
            EN: "RLY-4290 means a request was rejected because of a sending limit: it exceeded your plan's "
                "per-second limit. Only the excess requests are rejected; messages already accepted are delivered "
                "normally.",
        },
        fix={
            KO: "RLY-4290 처리 방법: `Retry-After` 헤더(보통 1초)만큼 기다렸다가 자동으로 다시 보내도 안전합니다. 대량 발송이라면 클라이언트에서 초당 요청 수를 한도 아래로 "
                "조절하세요.",
            EN: "How to handle RLY-4290: wait for the seconds given in `Retry-After` (usually 1) and send again; "
                "automatic retries are safe. For bulk campaigns, throttle the client below your plan's per-second "
                "limit.",
        },
        symptom=(KO, "Relay로 이벤트 안내를 한꺼번에 쏘니까 일부 요청이 너무 빠르다고 튕겨요. 잠깐 쉬었다가 다시 보내도 되나요?"),
    ),
    ErrorCode(
        "Relay", "RLY-4291", "429",
        name={KO: "일일 발송 한도 소진", EN: "Daily send quota exhausted"},
        overview={
            KO: "RLY-4291은 발송 한도 때문에 요청이 거부되었다는 뜻으로, 일일 발송 한도를 모두 썼기 때문입니다. 한도는 요금제마다 다르며 매일 00:00(KST)에 초기화됩니다.",
            EN: "RLY-4291 means a request was rejected because of a sending limit: your plan's daily quota is used "
                "up. The quota resets every day at 00:00 KST.",
        },
        fix={
            KO: "RLY-4291 처리 방법: 자동 재시도를 멈추세요. 00:00(KST) 초기화 전까지는 다시 보내도 계속 실패합니다. 급하다면 콘솔에서 요금제를 올리면 한도가 바로 늘어나고, "
                "아니면 남은 메시지를 00:00 이후에 보내세요.",
            EN: "How to handle RLY-4291: stop automatic retries; every retry fails until the quota resets at 00:00 "
                "KST. If the messages are urgent, upgrade the plan in the console, which raises the quota at once; "
                "otherwise send the rest after midnight.",
        },
        symptom=(CS, "Relay 오늘 quota를 다 써서 발송이 안 된대요. retry loop 계속 돌려 두면 되나요?"),
    ),
    ErrorCode(
        "Relay", "RLY-6001", "403",
        name={KO: "수신 거부", EN: "Recipient opted out"},
        overview={
            KO: "RLY-6001은 메시지를 수신자에게 전달하지 못했다는 뜻으로, 수신자가 해당 발신 프로필의 메시지를 수신 거부했기 때문입니다. 수신 거부는 수신자가 직접 철회할 때까지 "
                "유지됩니다.",
            EN: "RLY-6001 means the message could not be delivered to the recipient because they opted out of "
                "messages from this sender profile. The opt-out stays until the recipient withdraws it.",
        },
        fix={
            KO: "RLY-6001 처리 방법: 이 수신자에게는 어떤 채널로도 다시 보내지 마세요. 수신 거부자에게 광고성 메시지를 다시 보내면 정보통신망법 위반으로 과태료를 받을 수 있습니다. "
                "수신자 목록에서 번호를 빼세요.",
            EN: "How to handle RLY-6001: never send to this recipient again, through any channel. Resending "
                "advertising to someone who opted out can bring a fine under the Korean Network Act; remove the "
                "number from your lists.",
        },
        symptom=(KO, "광고 문자를 받기 싫다고 한 고객에게 다른 채널로 한 번 더 보내도 될까요?"),
    ),
    ErrorCode(
        "Relay", "RLY-6002", "503",
        name={KO: "일시적 수신 불가", EN: "Recipient temporarily unreachable"},
        overview={
            KO: "RLY-6002는 메시지를 수신자에게 전달하지 못했다는 뜻으로, 단말이 꺼져 있거나 통신이 불안정했기 때문입니다. 번호 자체는 유효합니다.",
            EN: "RLY-6002 means the message could not be delivered to the recipient because the handset was off or "
                "the connection was unstable. The number itself is valid.",
        },
        fix={
            KO: "RLY-6002 처리 방법: 이 수신자에게 24시간 안에 최대 3번까지 자동으로 다시 보내도 됩니다. 대체 발송(SMS fallback)을 켜 두면 첫 실패 후 문자로 자동 "
                "전환됩니다.",
            EN: "How to handle RLY-6002: you may send to this recipient again automatically, up to 3 times within 24 "
                "hours. With SMS fallback enabled, Relay switches to a text message after the first failure.",
        },
        symptom=(EN, "A customer's phone was switched off and our notification bounced. Is it OK to let the system "
                     "send it again later?"),
    ),
    ErrorCode(
        "Relay", "RLY-7100", "400",
        name={KO: "템플릿 미승인", EN: "Template not approved"},
        overview={
            KO: "RLY-7100은 메시지 템플릿 문제로 발송이 거부되었다는 뜻으로, 템플릿이 아직 검수 승인을 받지 못했거나 반려되었기 때문입니다. 검수는 영업일 기준 1~2일 걸립니다.",
            EN: "RLY-7100 means sending was rejected because of the message template: it has not passed review yet "
                "or was rejected. Review takes one to two business days.",
        },
        fix={
            KO: "RLY-7100 처리 방법: 다시 보내도 해결되지 않습니다. 콘솔의 템플릿 관리에서 검수 상태와 반려 사유를 확인하고 수정해 재검수를 요청하세요. 승인 전에는 같은 내용을 일반 "
                "문자로 보내세요.",
            EN: "How to handle RLY-7100: sending again does not help. Check the review status and rejection reason "
                "under Templates in the console, edit the template and resubmit it; until it is approved, send the "
                "content as a plain text message.",
        },
        symptom=(KO, "Relay에서 새로 만든 알림 양식으로 보내면 심사가 안 끝났다고 실패합니다. 계속 다시 보내 보면 되나요?"),
    ),
    ErrorCode(
        "Relay", "RLY-7101", "400",
        name={KO: "템플릿 변수 누락", EN: "Template variable missing"},
        overview={
            KO: "RLY-7101은 메시지 템플릿 문제로 발송이 거부되었다는 뜻으로, 템플릿에 정의된 변수(예: #{이름}, #{주문번호}) 일부가 요청 본문에 빠졌기 때문입니다.",
            EN: "RLY-7101 means sending was rejected because of the message template: some variables it defines (for "
                "example #{name} or #{order_no}) are missing from the request body.",
        },
        fix={
            KO: "RLY-7101 처리 방법: 빠진 변수를 `variables` 객체에 채워 다시 보내면 바로 해결됩니다. 변수 이름은 대소문자와 띄어쓰기까지 템플릿과 같아야 하고, 빈 문자열도 "
                "누락으로 처리됩니다.",
            EN: "How to handle RLY-7101: fill the missing variables into the `variables` object and send again; it "
                "clears at once. Names must match the template exactly, including case and spaces, and empty strings "
                "count as missing.",
        },
        symptom=(CS, "Relay template에 주문번호 값을 안 넣고 보냈더니 error가 나요. 어떻게 고치나요?"),
    ),
    ErrorCode(
        "Relay", "RLY-8050", "403",
        name={KO: "발신번호 미등록", EN: "Sender number not registered"},
        overview={
            KO: "RLY-8050은 발신번호 때문에 발송이 거부되었다는 뜻으로, 그 번호가 계정에 사전 등록되지 않았기 때문입니다. 전기통신사업법에 따라 등록된 번호로만 보낼 수 있습니다.",
            EN: "RLY-8050 means sending was rejected because of the sender number: it has not been pre-registered on "
                "your account. Korean telecom law only allows sending from registered numbers.",
        },
        fix={
            KO: "RLY-8050 처리 방법: 콘솔의 발신번호 관리에서 번호를 등록하고 통신서비스 이용증명원을 제출하세요. 심사는 보통 1영업일 안에 끝나며 승인되면 바로 보낼 수 있습니다.",
            EN: "How to handle RLY-8050: register the number under Sender numbers in the console and upload the "
                "carrier's proof-of-subscription certificate. Review usually takes one business day, and you can "
                "send as soon as it is approved.",
        },
        symptom=(KO, "Relay에서 새로 받은 회사 번호로 보내려니까 쓸 수 없는 번호라고 막혀요. 뭘 해야 하죠?"),
    ),
    ErrorCode(
        "Relay", "RLY-8051", "403",
        name={KO: "발신번호 차단", EN: "Sender number blocked"},
        overview={
            KO: "RLY-8051은 발신번호 때문에 발송이 거부되었다는 뜻으로, 등록된 번호가 도용 신고나 스팸 신고로 차단되었기 때문입니다. 차단된 번호로 보낸 메시지는 모두 거부됩니다.",
            EN: "RLY-8051 means sending was rejected because of the sender number: the registered number was blocked "
                "after a spoofing or spam report. Every message from a blocked number is rejected.",
        },
        fix={
            KO: "RLY-8051 처리 방법: 번호를 다시 등록해도 풀리지 않습니다. 고객센터에 소명 자료를 내고 차단 해제 심사를 받으세요. 심사 기간에는 다른 등록 번호로 보내야 합니다.",
            EN: "How to handle RLY-8051: registering the number again does not help. Submit supporting documents to "
                "customer support for an unblock review, and send from another registered number in the meantime.",
        },
        symptom=(CS, "스팸 신고 때문에 우리 Relay 발신번호가 block 됐어요. 번호 다시 등록하면 풀리나요?"),
    ),
)

ERROR_PAGE_TITLES = {
    ("PayLink", EN): "PayLink error {code}: {name}",
    ("PayLink", KO): "PayLink 오류 {code}: {name}",
    ("Orion", KO): "Orion 이벤트 코드 {code}: {name}",
    ("Orion", EN): "Orion event code {code}: {name}",
    ("CloudVault", EN): "CloudVault error {code}: {name}",
    ("Keystone", KO_EN): "Keystone 오류 {code}: {name}",
    ("Relay", KO): "Relay 오류 코드 {code}: {name}",
    ("Relay", EN): "Relay error code {code}: {name}",
}


def _error_example(err: ErrorCode, lang: str, rid: str) -> str:
    """The third passage of an error page: how the code shows up in a response or log (a code snippet)."""
    code, name, status = err.code, err.name[lang], err.status
    english_name = err.name.get(EN, name)
    if err.product == "PayLink" and not status.isdigit():  # webhook codes live in the delivery log, not in responses
        line = f"2024-05-02T00:13:55Z evt_{rid} delivery failed {code} ({english_name}) attempt=1"
        if lang == EN:
            return f"Webhook delivery log entry for {code}:\n```\n{line}\n```\nOpen the event to see each attempt."
        return f"{code}의 웹훅 전송 로그 예시:\n```\n{line}\n```\n이벤트를 열면 시도별 결과를 볼 수 있습니다."
    body = json.dumps({"error": {"code": code, "message": english_name, "request_id": f"req_{rid}"}})
    if err.product == "PayLink":
        if lang == EN:
            return (f"Example response body for {code} (HTTP {status}):\n```json\n{body}\n```\n"
                    "Quote the `request_id` when you contact support.")
        return (f"{code} 응답 본문 예시 (HTTP {status}):\n```json\n{body}\n```\n"
                "고객지원에 문의할 때 `request_id`를 함께 알려 주세요.")
    if err.product == "Orion":
        line = f"2024-03-18T02:14:07+09:00 orion bmc[412]: {status.upper()} {code} {english_name} id={rid}"
        if lang == EN:
            return (f"The management console event log and syslog record {code} like this:\n```\n{line}\n```\n"
                    "Include the unit's serial number when you send logs to support.")
        return (f"관리 콘솔 이벤트 로그와 syslog에는 {code} 이벤트가 다음과 같이 기록됩니다.\n```\n{line}\n```\n"
                "로그를 기술 지원에 보낼 때는 장비 시리얼 번호를 함께 적어 주세요.")
    if err.product == "CloudVault":
        return (f"CLI output when {code} occurs:\n```\n$ cv job status job-{rid}\n"
                f"Error {code}: {name} (HTTP {status})\n```\n"
                "The same code appears in the job history of the web console.")
    if err.product == "Keystone":
        event = json.dumps({"event": "auth.failure", "code": code, "reason": name, "ip": "203.0.113.24", "id": rid},
                           ensure_ascii=False)
        return (f"{code} 오류는 audit log에 다음과 같이 남습니다.\n```json\n{event}\n```\n"
                "Security Admin은 Settings → Audit log에서 code로 필터링할 수 있습니다.")
    body = json.dumps({"code": code, "message": name, "request_id": f"req_{rid}"}, ensure_ascii=False)
    if lang == EN:
        return (f"Example API response for {code} (HTTP {status}):\n```json\n{body}\n```\n"
                "The same code is shown as the failure reason in the console's send history.")
    return (f"{code} 발생 시 API 응답 예시 (HTTP {status}):\n```json\n{body}\n```\n"
            "발송 내역 화면의 실패 사유에도 같은 코드가 표시됩니다.")


ERROR_INDEX_PAGES = {  # (product, lang) -> (title, intro); never judged
    ("PayLink", EN): ("PayLink error code reference", "All PayLink API and webhook error codes at a glance:"),
    ("PayLink", KO): ("PayLink 오류 코드 목록", "PayLink API와 웹훅 오류 코드를 한눈에 볼 수 있습니다."),
    ("Orion", KO): ("Orion 이벤트 코드 목록", "Orion 장비가 기록하는 이벤트 코드 목록입니다."),
    ("Orion", EN): ("Orion event code list", "Event codes recorded by Orion units:"),
    ("CloudVault", EN): ("CloudVault error codes", "Error codes returned by the CloudVault API, CLI and agents:"),
    ("Keystone", KO_EN): ("Keystone 오류 코드 목록", "Keystone 로그인과 provisioning 오류 코드 목록입니다."),
    ("Relay", KO): ("Relay 오류 코드 목록", "Relay 발송 API가 반환하는 오류 코드 목록입니다."),
    ("Relay", EN): ("Relay error code list", "Error codes returned by the Relay sending API:"),
}
TABLE_HEADERS = {EN: "| Code | Name | Status |", KO: "| 코드 | 이름 | 상태 |", KO_EN: "| Code | 이름 | Status |"}

RELEASE_VERSIONS = {"PayLink": ("2024.3", "2024.5"), "Orion": ("콘솔 3.2", "콘솔 3.3"),
                    "CloudVault": ("2024-04", "2024-06"), "Keystone": ("2024.2", "2024.4"), "Relay": ("v2.6", "v2.7")}
RELEASE_NOTE_TITLES = {EN: "{product} release notes {version}", KO: "{product} 릴리스 노트 {version}",
                       KO_EN: "{product} release note {version}"}
# Release notes name both codes of a twin pair and repeat the words users search with, yet answer nothing.
RELEASE_NOTE_TEMPLATES = {
    EN: (
        "{product} {version}: {a} ({name_a}) and {b} ({name_b}) now appear together under one filter in the error "
        "dashboard, and both messages link to their knowledge-base pages. Update alert rules or retry counters that "
        "matched the old message text.",
        "{product} {version}: the monthly error report now counts {a} and {b} separately instead of as one category. "
        "We also fixed a bug where {b} was shown with the description of {a} in exported CSV files.",
    ),
    KO: (
        "{product} {version} 변경 사항: {a}({name_a}), {b}({name_b}) 두 오류가 오류 대시보드에서 하나의 필터로 "
        "묶였고, 두 오류 메시지에 도움말 링크가 추가되었습니다. 기존 메시지 문구를 기준으로 만든 알림 규칙이나 재시도 카운터는 "
        "수정해야 합니다.",
        "{product} {version} 변경 사항: 월간 오류 리포트에서 {a}, {b} 두 코드를 별도 항목으로 집계합니다. CSV로 "
        "내보낼 때 {b} 항목에 {a}의 설명이 표시되던 문제도 수정했습니다.",
    ),
    KO_EN: (
        "{product} {version} release note: {a}({name_a}), {b}({name_b}) 두 오류가 audit log filter에서 하나의 "
        "category로 묶였고, 오류 화면에 help link가 추가되었습니다. 기존 message 문구로 만든 alert rule이나 retry counter는 "
        "수정이 필요합니다.",
        "{product} {version} release note: monthly security report에서 {a}, {b} 두 코드를 따로 집계합니다. CSV "
        "export에서 {b} 항목에 {a}의 설명이 표시되던 bug도 수정했습니다.",
    ),
}


def _twin_pairs() -> list[tuple[ErrorCode, ErrorCode]]:
    return [(ERROR_CODES[i], ERROR_CODES[i + 1]) for i in range(0, len(ERROR_CODES), 2)]


# ---------------------------------------------------------------------------------------------------------------------
# Price lists. Numbers deliberately swap between tiers and years, and between products (CloudVault 2024 Pro keeps
# snapshots 90 days; Keystone Pro keeps audit logs 30 days, like CloudVault 2023 Pro).
# ---------------------------------------------------------------------------------------------------------------------


class PlanFamily(NamedTuple):
    topic: str  # topic prefix; the edition is appended ("cloudvault-plans-2024")
    product: str
    langs: tuple[str, ...]
    title: dict[str, str]  # per lang, with {label}
    labels: dict[str, dict[str, str]]  # edition -> lang -> label
    header: dict[str, str]  # per lang: Markdown table header and separator
    row: dict[str, str]  # per lang: one table row, formatted with a tier's values
    tier_text: dict[str, str]  # per lang: the per-tier passage
    tiers: dict[str, tuple[dict, ...]]  # edition -> values per tier (key "tier" is the section name)


def _payout(days: int, lang: str) -> str:
    if lang == EN:
        return "on the same business day (D+0)" if days == 0 else f"{days} business days after capture (D+{days})"
    return "매입 당일(D+0)에" if days == 0 else f"매입 후 {days}영업일(D+{days})에"


PLAN_FAMILIES: tuple[PlanFamily, ...] = (
    PlanFamily(
        "cloudvault-plans", "CloudVault", (EN,),
        {EN: "CloudVault plans and limits ({label})"},
        {"2024": {EN: "effective 1 April 2024"}, "2023": {EN: "2023 price list, superseded on 1 April 2024"}},
        {EN: "| Plan | Snapshot retention | Restore points | Cross-region restore | Price per TB/month |\n"
             "|---|---|---|---|---|"},
        {EN: "| {Tier} | {retention} days | {points} | {xr_short} | {price} |"},
        {EN: "CloudVault {Tier} ({label}): daily snapshots are kept for {retention} days and a workspace can hold up "
             "to {points} restore points. Cross-region restore is {xr_long}. The list price is {price} per TB per "
             "month, billed on the average stored volume."},
        {
            "2024": (
                dict(tier="basic", Tier="Basic", retention=30, points=50, xr_short="—", xr_long="not included",
                     price="$12"),
                dict(tier="pro", Tier="Pro", retention=90, points=500, xr_short="—", xr_long="not included",
                     price="$20"),
                dict(tier="enterprise", Tier="Enterprise", retention=365, points="unlimited", xr_short="yes",
                     xr_long="included, with approval by a second admin", price="custom"),
            ),
            "2023": (
                dict(tier="basic", Tier="Basic", retention=7, points=20, xr_short="—", xr_long="not included",
                     price="$10"),
                dict(tier="pro", Tier="Pro", retention=30, points=200, xr_short="—", xr_long="not included",
                     price="$18"),
                dict(tier="enterprise", Tier="Enterprise", retention=90, points=1000, xr_short="yes",
                     xr_long="included, with approval by a second admin", price="custom"),
            ),
        },
    ),
    PlanFamily(
        "paylink-plans", "PayLink", (EN, KO),
        {EN: "PayLink pricing and payouts ({label})", KO: "PayLink 요금제와 정산 주기 ({label})"},
        {"2024": {EN: "effective 1 April 2024", KO: "2024년 4월 1일 시행"},
         "2023": {EN: "2023 price list, superseded on 1 April 2024", KO: "2023년 요금표, 2024년 4월 1일 종료"}},
        {EN: "| Plan | Card fee | Payout | Monthly fee |\n|---|---|---|---|",
         KO: "| 요금제 | 카드 수수료 | 정산 | 월 기본료 |\n|---|---|---|---|"},
        {EN: "| {Tier} | {fee}% + 0.30 USD | D+{payout} | {monthly_en} |",
         KO: "| {Tier} | {fee}% + 300원 | D+{payout} | {monthly_ko} |"},
        {EN: "PayLink {Tier} ({label}): each card payment costs {fee}% + 0.30 USD and payouts arrive {payout_en}. "
             "The monthly fee is {monthly_en}.",
         KO: "PayLink {Tier} 요금제({label}): 카드 결제 수수료는 건당 {fee}% + 300원이고, 정산금은 {payout_ko} "
             "입금됩니다. 월 기본료는 {monthly_ko}입니다."},
        {
            "2024": (
                dict(tier="starter", Tier="Starter", fee="3.2", payout=3, monthly_en="free", monthly_ko="무료"),
                dict(tier="growth", Tier="Growth", fee="2.9", payout=1, monthly_en="49 USD", monthly_ko="49달러"),
                dict(tier="scale", Tier="Scale", fee="2.5", payout=0, monthly_en="299 USD", monthly_ko="299달러"),
            ),
            "2023": (
                dict(tier="starter", Tier="Starter", fee="3.4", payout=7, monthly_en="free", monthly_ko="무료"),
                dict(tier="growth", Tier="Growth", fee="3.2", payout=3, monthly_en="39 USD", monthly_ko="39달러"),
                dict(tier="scale", Tier="Scale", fee="2.9", payout=1, monthly_en="249 USD", monthly_ko="249달러"),
            ),
        },
    ),
    PlanFamily(
        "relay-plans", "Relay", (KO,),
        {KO: "Relay 요금제별 발송 한도 ({label})"},
        {"2024": {KO: "2024년 1월 1일 시행"}, "2023": {KO: "2023년 요금표, 2024년 1월 1일 종료"}},
        {KO: "| 요금제 | 초당 발송 | 일일 발송 | 건당 요금 |\n|---|---|---|---|"},
        {KO: "| {Tier} | {rps}건 | {daily}건 | {price} |"},
        {KO: "{Tier} 요금제({label})는 초당 최대 {rps}건, 하루 최대 {daily}건까지 발송할 수 있습니다. 메시지 요금은 "
             "{price}이며, 한도를 넘는 요청은 오류 코드와 함께 거부됩니다."},
        {
            "2024": (
                dict(tier="starter", Tier="스타터", rps=10, daily="10,000", price="건당 8원"),
                dict(tier="business", Tier="비즈니스", rps=50, daily="100,000", price="건당 7원"),
                dict(tier="enterprise", Tier="엔터프라이즈", rps=200, daily="1,000,000", price="별도 협의"),
            ),
            "2023": (
                dict(tier="starter", Tier="스타터", rps=5, daily="5,000", price="건당 9원"),
                dict(tier="business", Tier="비즈니스", rps=10, daily="10,000", price="건당 8원"),
                dict(tier="enterprise", Tier="엔터프라이즈", rps=50, daily="100,000", price="별도 협의"),
            ),
        },
    ),
    PlanFamily(
        "keystone-plans", "Keystone", (KO_EN,),
        {KO_EN: "Keystone plan 비교 ({label})"},
        {"2024": {KO_EN: "2024년 기준"}},
        {KO_EN: "| Plan | Seats | SSO | Audit log 보관 |\n|---|---|---|---|"},
        {KO_EN: "| {Tier} | {seats_short} | {sso_short} | {audit}일 |"},
        {KO_EN: "Keystone {Tier} plan({label})에서는 seat를 {seats} 쓸 수 있고, SSO는 {sso}. Audit log는 "
                "{audit}일 동안 보관되며, 그 이전 기록은 export해 두지 않으면 삭제됩니다. {extra}"},
        {
            "2024": (
                dict(tier="free", Tier="Free", seats="5개까지", seats_short="5", sso="지원하지 않습니다",
                     sso_short="미지원", audit=7, extra=""),
                dict(tier="pro", Tier="Pro", seats="100개까지", seats_short="100", sso="SAML SSO와 SSO enforcement를 지원합니다",
                     sso_short="SAML SSO, SSO enforcement", audit=30,
                     extra="SCIM provisioning과 break-glass 계정은 포함되지 않습니다."),
                dict(tier="enterprise", Tier="Enterprise", seats="제한 없이", seats_short="무제한",
                     sso_short="SAML SSO, SCIM provisioning",
                     sso="SAML SSO와 SCIM provisioning을 지원합니다",
                     audit=90, extra="break-glass 계정을 최대 2개까지 만들 수 있습니다."),
            ),
        },
    ),
    PlanFamily(
        "pulse-plans", "Pulse", (EN,),
        {EN: "Pulse pricing ({label})"},
        {"2024": {EN: "2024"}},
        {EN: "| Plan | Hosts | Metric retention | Price |\n|---|---|---|---|"},
        {EN: "| {Tier} | up to {hosts} | {retention} days | {price} |"},
        {EN: "Pulse {Tier} ({label}) monitors up to {hosts} hosts and keeps metrics for {retention} days at full "
             "resolution. It costs {price}; custom metrics beyond {custom} per host are billed separately."},
        {
            "2024": (
                dict(tier="developer", Tier="Developer", hosts=5, retention=7, price="nothing", custom=100),
                dict(tier="team", Tier="Team", hosts=50, retention=30, price="15 USD per host per month", custom=200),
                dict(tier="business", Tier="Business", hosts=500, retention=395, price="23 USD per host per month",
                     custom=500),
            ),
        },
    ),
)


def _plan_pages(family: PlanFamily) -> list[tuple[str, str, str, str, list[tuple[str, str]]]]:
    """(topic, lang, edition, title, sections) for every edition and language of a price list."""
    pages = []
    for edition, tiers in family.tiers.items():
        for lang in family.langs:
            label = family.labels[edition][lang]
            values = [dict(t, label=label, payout_en=_payout(t.get("payout", 0), EN),
                           payout_ko=_payout(t.get("payout", 0), KO)) for t in tiers]
            table = "\n".join([f"{family.product} ({label}):", "", family.header[lang]]
                              + [family.row[lang].format(**v) for v in values])
            sections = [("table", table)]
            sections += [(v["tier"], family.tier_text[lang].format(**v).strip()) for v in values]
            pages.append((f"{family.topic}-{edition}", lang, edition, family.title[lang].format(label=label),
                          sections))
    return pages


# ---------------------------------------------------------------------------------------------------------------------
# Orion manuals: S1 (2021) and S2 (2023) in Korean and English. The S1 page is the outdated near-twin of the S2 page.
# ---------------------------------------------------------------------------------------------------------------------

ORION_MODELS = {
    "S1": dict(model="Orion S1", year=2021, warn=40, crit=45, delay=30, hold=10, tmin=10, tmax=35, alt=2000),
    "S2": dict(model="Orion S2", year=2023, warn=47, crit=52, delay=10, hold=20, tmin=5, tmax=40, alt=3000),
}
ORION_MANUAL_TITLES = {KO: "{model} 설치 및 운영 설명서 ({year})", EN: "{model} installation and operation manual ({year})"}
# Sections whose wording only differs by the numbers are templates; the rest differ in substance and are per model.
ORION_MANUAL_SECTIONS: dict[str, dict[str, str | dict[str, str]]] = {
    "shutdown": {
        KO: "{model}의 비상 정지(emergency shutdown)는 흡기 온도를 기준으로 동작합니다. 흡기 온도가 {warn}°C를 넘으면 "
            "경고(ORN-E210)와 함께 CPU 클럭을 낮추고, {crit}°C를 넘으면 {delay}초 뒤 전원을 차단합니다(ORN-E211). 두 "
            "임계값 모두 사용자가 변경할 수 없습니다.",
        EN: "Emergency shutdown on the {model} is driven by the inlet temperature. Above {warn}°C the unit raises a "
            "warning (ORN-E210) and lowers the CPU clock; above {crit}°C it cuts power after {delay} seconds "
            "(ORN-E211). Neither threshold can be changed by the user.",
    },
    "fans": {
        KO: {"S1": "{model}에는 팬 모듈 4개가 들어가며 팬 모드는 자동·성능 두 가지입니다. 팬 모듈은 장비 전원을 끈 "
                   "상태에서만 교체할 수 있습니다.",
             "S2": "{model}에는 팬 모듈 6개가 들어가며 팬 모드는 자동·성능·저소음 세 가지입니다. 팬 모듈은 hot-swap을 "
                   "지원하고, 저소음 모드는 흡기 온도가 30°C 이하일 때만 유지됩니다."},
        EN: {"S1": "The {model} holds four fan modules and offers two fan modes, Auto and Performance. Fan modules can "
                   "only be replaced with the unit powered off.",
             "S2": "The {model} holds six fan modules and offers three fan modes: Auto, Performance and Quiet. Fan "
                   "modules are hot-swappable, and Quiet mode only stays on while the inlet is at or below 30°C."},
    },
    "firmware": {
        KO: {"S1": "{model} 펌웨어는 USB 메모리로만 업데이트할 수 있습니다. FAT32로 포맷한 USB에 이미지 파일을 복사해 "
                   "후면 포트에 꽂고 전원을 켜면 자동으로 설치되며, 약 15분이 걸립니다.",
             "S2": "{model} 펌웨어는 웹 관리 콘솔의 시스템 → 펌웨어 메뉴에서 이미지를 올려 업데이트합니다. 올린 이미지는 "
                   "서명 검증을 거치며(실패 시 ORN-E520), 설치에는 약 8분이 걸립니다. USB는 콘솔에 접속할 수 없을 때 "
                   "쓰는 복구 용도로만 남아 있습니다."},
        EN: {"S1": "{model} firmware can only be updated from a USB stick. Copy the image to a FAT32-formatted stick, "
                   "plug it into the rear port and power on; installation starts automatically and takes about 15 "
                   "minutes.",
             "S2": "Update {model} firmware by uploading the image in the web management console under System → "
                   "Firmware. Images are signature-checked (ORN-E520 on failure) and installation takes about 8 "
                   "minutes. USB remains only as a recovery path when the console is unreachable."},
    },
    "reset": {
        KO: "공장 초기화: 전원이 켜진 상태에서 후면 RESET 버튼을 {hold}초 이상 누르세요. {reset_note} 초기화하면 "
            "네트워크와 계정 설정이 지워지고 이벤트 로그는 유지됩니다.",
        EN: "Factory reset: with the unit powered on, hold the rear RESET button for at least {hold} seconds. "
            "{reset_note} A reset erases network and account settings but keeps the event log.",
    },
    "leds": {
        KO: {"S1": "{model} 전면 상태 LED:\n\n| 색상 | 의미 |\n|---|---|\n| 초록 점등 | 정상 동작 |\n"
                   "| 주황 깜박임 | 경고 (온도, 팬, 전원) |\n| 빨강 점등 | 비상 정지 또는 부팅 실패 |",
             "S2": "{model} 전면 상태 LED:\n\n| 색상 | 의미 |\n|---|---|\n| 초록 점등 | 정상 동작 |\n"
                   "| 주황 깜박임 | 경고 (온도, 팬, 전원) |\n| 빨강 점등 | 비상 정지 또는 부팅 실패 |\n"
                   "| 파랑 깜박임 | 펌웨어 업데이트 진행 중, 전원을 끄지 마세요 |\n| 흰색 점등 | 위치 표시(locator) 켜짐 |"},
        EN: {"S1": "{model} front status LED:\n\n| Colour | Meaning |\n|---|---|\n| Solid green | Normal operation |\n"
                   "| Blinking amber | Warning (temperature, fan, power) |\n"
                   "| Solid red | Emergency shutdown or boot failure |",
             "S2": "{model} front status LED:\n\n| Colour | Meaning |\n|---|---|\n| Solid green | Normal operation |\n"
                   "| Blinking amber | Warning (temperature, fan, power) |\n"
                   "| Solid red | Emergency shutdown or boot failure |\n"
                   "| Blinking blue | Firmware update in progress, do not power off |\n| Solid white | Locator on |"},
    },
    "power": {
        KO: {"S1": "{model}은 550W 단일 전원 공급 장치(PSU)를 사용하며 이중화를 지원하지 않습니다. PSU 교체는 전원을 "
                   "끈 상태에서 진행해야 합니다.",
             "S2": "{model}은 800W PSU 두 개를 이중화(1+1)로 구성하며, PSU는 hot-swap을 지원합니다. 한쪽 PSU가 멈추면 "
                   "ORN-E305가 기록됩니다."},
        EN: {"S1": "The {model} uses a single 550 W power supply unit (PSU) without redundancy. Replace the PSU only "
                   "with the unit powered off.",
             "S2": "The {model} runs two 800 W PSUs in a redundant 1+1 configuration, and both are hot-swappable. If "
                   "one PSU stops, ORN-E305 is logged."},
    },
    "environment": {
        KO: "운영 환경: 흡기 온도 {tmin}~{tmax}°C, 상대 습도 10~85%(응결 없음), 해발 {alt}m 이하. 전면과 후면에 각각 "
            "15cm 이상의 통풍 공간을 확보하세요.",
        EN: "Operating environment: inlet temperature {tmin}–{tmax}°C, relative humidity 10–85% non-condensing, "
            "altitude up to {alt} m. Keep at least 15 cm of free space in front of and behind the unit.",
    },
}
ORION_RESET_NOTES = {
    ("S1", KO): "상태 LED가 빠르게 깜박이면 버튼에서 손을 떼도 됩니다.",
    ("S2", KO): "상태 LED가 흰색으로 바뀐 뒤 관리 콘솔에서 초기화 확인을 한 번 더 눌러야 진행됩니다.",
    ("S1", EN): "Release the button when the status LED starts blinking fast.",
    ("S2", EN): "When the status LED turns white, confirm the reset once more in the management console.",
}


def _orion_manual_sections(model_key: str, lang: str) -> list[tuple[str, str]]:
    values = dict(ORION_MODELS[model_key], reset_note=ORION_RESET_NOTES[(model_key, lang)])
    sections = []
    for name, per_lang in ORION_MANUAL_SECTIONS.items():
        template = per_lang[lang]
        if isinstance(template, dict):
            template = template[model_key]
        sections.append((name, template.format(**values)))
    return sections


# ---------------------------------------------------------------------------------------------------------------------
# Hand-written pages: policies, API references with code, configuration references, FAQs and checklists.
# ---------------------------------------------------------------------------------------------------------------------


class Doc(NamedTuple):
    topic: str
    lang: str
    doc_type: str
    product: str
    version: str | None
    title: str
    sections: tuple[tuple[str, str], ...]


DOCS: tuple[Doc, ...] = (
    # --- Keystone policies: the multi-condition rules behind the multi-hop questions ---
    Doc("ks-owner-recovery", KO_EN, "policy", "Keystone", None, "Owner 계정 복구 정책", (
        ("request", "Owner 계정이 잠기거나 Owner가 MFA device를 잃어버렸을 때의 복구 절차입니다. 복구 요청은 Owner 본인이 "
                    "아닌 Org Admin이 Settings → Security에서 시작하며, 요청자가 아닌 서로 다른 Org Admin 2명의 승인이 "
                    "필요합니다."),
        ("sso", "SSO가 enforce된 조직에서는 IdP에서 Owner의 신원이 먼저 확인되어야 승인 단계로 넘어갈 수 있습니다. "
                "Keystone은 IdP를 거치지 않은 복구 승인을 받아들이지 않습니다."),
        ("idp_outage", "IdP 자체가 장애로 사용할 수 없을 때에만 emergency recovery code로 Owner 로그인을 할 수 있습니다. "
                       "이 경우에도 Org Admin 2명의 승인은 그대로 필요하며, 로그인 직후 Owner의 기존 session과 API "
                       "token이 모두 폐기됩니다."),
    )),
    Doc("ks-sso-enforcement", KO_EN, "policy", "Keystone", None, "SSO enforcement 정책", (
        ("scope", "SSO를 enforce하면 조직의 모든 사용자는 IdP를 통해서만 로그인할 수 있고 password login은 "
                  "비활성화됩니다. SSO enforcement는 Pro 이상 plan에서 켤 수 있습니다."),
        ("break_glass", "예외는 break-glass 계정뿐입니다. break-glass 계정은 Enterprise plan에서만 최대 2개까지 만들 수 "
                        "있으며, hardware security key로만 로그인할 수 있고 모든 사용 내역이 audit log에 남습니다. "
                        "break-glass 계정의 key는 90일마다 교체해야 합니다."),
    )),
    Doc("ks-admin-roles", KO_EN, "policy", "Keystone", None, "관리자 역할과 권한", (
        ("table", "Keystone 관리자 역할:\n\n| 역할 | 할 수 있는 일 |\n|---|---|\n"
                  "| Org Admin | 사용자 초대·비활성화, SSO 설정, Owner 계정 복구 승인 |\n"
                  "| Security Admin | MFA reset, security event 검토, audit log export, `audit:read` scope 부여 |\n"
                  "| Billing Admin | 결제 수단 관리, plan 변경 |"),
        ("rules", "한 계정이 Org Admin과 Security Admin 역할을 함께 가질 수 있지만, Owner 계정 복구에서는 요청자와 "
                  "승인자가 같은 사람일 수 없습니다. 역할 부여와 회수는 모두 audit log에 기록됩니다."),
    )),
    Doc("ks-mfa-reset", KO_EN, "policy", "Keystone", None, "MFA reset 절차", (
        ("who", "MFA reset은 Security Admin만 실행할 수 있습니다. 사용자가 MFA device를 분실했다면 Security Admin이 영상 "
                "통화로 신분증과 얼굴을 대조해 본인 확인을 한 뒤 reset을 진행합니다."),
        ("after", "reset 후 24시간 동안 해당 사용자는 새 MFA device 등록만 할 수 있고 관리자 권한은 일시 정지됩니다. "
                  "Owner 계정의 MFA는 이 절차로 reset할 수 없으며 Owner 계정 복구 정책을 따라야 합니다."),
    )),
    Doc("ks-recovery-codes", KO_EN, "policy", "Keystone", None, "Emergency recovery code 관리", (
        ("issue", "Emergency recovery code는 Owner만 발급할 수 있으며 한 번에 10개가 한 세트로 만들어집니다. 세트는 발급 "
                  "후 90일 동안 유효하고, 각 코드는 한 번만 쓸 수 있습니다."),
        ("rotate", "새 세트를 발급하면 이전 세트는 즉시 무효가 됩니다. 코드는 IdP와 분리된 오프라인 금고 같은 곳에 "
                   "보관하고, 코드를 사용한 뒤에는 Owner가 사용 사유를 audit log에 남겨야 합니다."),
    )),
    # --- CloudVault policies ---
    Doc("cv-retention-lock", EN, "policy", "CloudVault", None, "Retention lock and deletion policy", (
        ("immutability", "Snapshots under a retention lock are immutable until `locked_until`. Nobody can delete them "
                         "or shorten the lock: workspace owners, admins and CloudVault support included. This is what "
                         "makes the lock acceptable to auditors as WORM storage."),
        ("closing", "Closing a workspace does not remove locked snapshots early: they stay billed at the storage rate "
                    "of your last plan until the lock expires. A legal hold blocks deletion with no end date until a "
                    "user with the Compliance role releases it."),
    )),
    Doc("cv-cross-region", EN, "policy", "CloudVault", None, "Cross-region restore policy", (
        ("eligibility", "Cross-region restore is available on the Enterprise plan only. A restore into a region other "
                        "than the snapshot's home region must be approved by a second workspace admin; the requester "
                        "cannot approve their own job."),
        ("billing", "Approved cross-region jobs are billed for inter-region egress at the standard per-GB rate. Seoul "
                    "snapshots can be restored to Tokyo and Singapore; other region pairs need a support request."),
    )),
    # --- PayLink policies (English and Korean) ---
    Doc("paylink-refund-policy", EN, "policy", "PayLink", None, "PayLink refund policy", (
        ("limits", "Refunds always go back to the original payment method. A payment can be split into at most 10 "
                   "partial refunds, and their total can never exceed the captured amount."),
        ("window", "Card refunds are accepted for 180 days after capture. After that window, money must be returned "
                   "as a manual credit by bank transfer, which a user with the Finance role approves; it arrives in 2 "
                   "to 3 business days."),
        ("fees", "Since the 2024 price list, processing fees are not returned when you refund a payment. Under the "
                 "2023 price list the percentage part of the fee was returned pro rata."),
    )),
    Doc("paylink-refund-policy", KO, "policy", "PayLink", None, "PayLink 환불 정책", (
        ("limits", "환불은 항상 원래 결제 수단으로 돌아갑니다. 한 결제는 최대 10번까지 나누어 부분 환불할 수 있으며, "
                   "환불 합계는 매입 금액을 넘을 수 없습니다."),
        ("window", "카드 환불은 매입 후 180일까지 접수됩니다. 이 기간이 지나면 계좌 이체 방식의 수동 환급으로 돌려줘야 "
                   "하며, Finance 역할 사용자가 승인하고 2~3영업일 안에 입금됩니다."),
        ("fees", "2024년 요금표부터는 환불해도 결제 수수료를 돌려드리지 않습니다. 2023년 요금표에서는 수수료 중 정률 "
                 "부분을 환불 비율만큼 돌려드렸습니다."),
    )),
    Doc("paylink-payout-hold", EN, "policy", "PayLink", None, "PayLink payout hold policy", (
        ("new_merchants", "During the first 30 days after activation, payouts to new merchants are held for an extra "
                          "7 days on top of the payout schedule of their plan."),
        ("review", "Any single payment above 10,000 USD (or 13,000,000 KRW) is reviewed before it is paid out; the "
                   "review finishes within one business day. An open chargeback reserves the disputed amount from "
                   "the next payout."),
    )),
    Doc("paylink-payout-hold", KO, "policy", "PayLink", None, "PayLink 정산 보류 정책", (
        ("new_merchants", "신규 가맹점은 활성화 후 30일 동안 요금제의 정산 주기에 더해 7일씩 정산이 추가로 보류됩니다."),
        ("review", "한 건에 10,000달러(또는 1,300만 원)를 넘는 결제는 정산 전에 검토하며, 검토는 1영업일 안에 끝납니다. "
                   "차지백이 접수되면 분쟁 금액만큼 다음 정산에서 유보됩니다."),
    )),
    # --- Relay policies ---
    Doc("relay-ad-policy", KO, "policy", "Relay", None, "광고성 메시지 발송 정책", (
        ("consent", "광고성 메시지는 수신자의 사전 동의를 받은 경우에만 보낼 수 있습니다. 메시지 첫머리에 '(광고)'를 "
                    "표기하고, 본문에 무료 수신 거부 방법을 넣어야 합니다."),
        ("night", "오후 9시부터 다음 날 오전 8시까지는 광고성 메시지를 보낼 수 없습니다. 이 시간대에 보내려면 일반 수신 "
                  "동의와 별도로 야간 수신 동의를 받아야 합니다. 주문·배송 안내 같은 정보성 알림에는 시간 제한이 "
                  "없습니다."),
        ("opt_out", "수신을 거부한 번호(RLY-6001)에는 광고성 메시지를 어떤 채널로도 보낼 수 없으며, 수신 동의는 2년마다 "
                    "다시 확인해야 합니다."),
    )),
    Doc("relay-sender-policy", KO, "policy", "Relay", None, "발신번호 등록 정책", (
        ("register", "모든 발신번호는 발송 전에 사전 등록해야 합니다. 법인 번호는 통신서비스 이용증명원을, 개인 번호는 "
                     "본인 명의 확인 서류를 제출합니다."),
        ("block", "등록된 번호가 도용이나 스팸으로 신고되면 즉시 차단(RLY-8051)되며, 차단 해제 심사에는 영업일 기준 "
                  "3~5일이 걸립니다. 같은 사업자의 번호가 6개월 안에 두 번 차단되면 그 번호는 영구 차단됩니다."),
    )),
    # --- Orion policy ---
    Doc("orion-warranty", KO, "policy", "Orion", None, "Orion 보증 및 RMA 정책", (
        ("period", "보증 기간은 Orion S2가 구매일로부터 3년, Orion S1이 2년입니다. 보증 기간 안에 생긴 하드웨어 결함은 "
                   "RMA로 무상 교체합니다."),
        ("inspection", "30일 안에 비상 정지(ORN-E211)가 3번 이상 기록된 장비는 RMA 접수 전에 현장 점검을 받아야 합니다. "
                       "설치 환경(흡기 온도, 랙 공기 흐름)이 원인으로 확인되면 보증 대상에서 제외됩니다."),
        ("cru", "PSU와 팬 모듈은 고객 교체 부품(CRU)이어서 장비 전체를 보내지 않고 부품만 먼저 받아 교체할 수 있습니다. "
                "선발송 부품을 받은 뒤 14일 안에 고장 난 부품을 반납해야 합니다."),
    )),
    # --- PayLink API reference (with code) ---
    Doc("paylink-api-refunds", EN, "api", "PayLink", "v1", "Create a refund — POST /v1/refunds", (
        ("overview", "Use `POST /v1/refunds` to return money for a captured payment. Pass the `payment_id` and, for a "
                     "partial refund, an `amount` in the smallest currency unit; omit `amount` to refund the whole "
                     "remaining balance. Refunds are asynchronous: the response says `pending` and a "
                     "`refund.succeeded` webhook follows, usually within minutes."),
        ("params", "Request parameters:\n\n| Parameter | Type | Required | Description |\n|---|---|---|---|\n"
                   "| `payment_id` | string | yes | The captured payment to refund |\n"
                   "| `amount` | integer | no | Smallest currency unit; defaults to the refundable balance |\n"
                   "| `reason` | enum | no | `duplicate`, `fraudulent` or `requested_by_customer` |\n"
                   "| `metadata` | object | no | Up to 20 keys, echoed in webhooks |"),
        ("example", "Python example:\n```python\nimport paylink\n\npaylink.api_key = \"sk_live_...\"\n"
                    "refund = paylink.Refund.create(\n    payment_id=\"pay_3KfQ2x\",\n"
                    "    amount=1500,  # partial refund of 15.00\n    reason=\"requested_by_customer\",\n"
                    "    idempotency_key=\"refund-order-8812\",\n)\nprint(refund.status)  # \"pending\"\n```"),
    )),
    Doc("paylink-api-refunds", KO, "api", "PayLink", "v1", "환불 생성 — POST /v1/refunds", (
        ("overview", "`POST /v1/refunds`로 매입된 결제를 환불합니다. `payment_id`를 넘기고, 부분 환불이라면 최소 통화 "
                     "단위로 `amount`를 함께 보냅니다. `amount`를 빼면 남은 잔액 전체가 환불됩니다. 환불은 비동기로 "
                     "처리되어 응답은 `pending`이고, 보통 몇 분 안에 `refund.succeeded` 웹훅이 옵니다."),
        ("params", "요청 파라미터:\n\n| 파라미터 | 타입 | 필수 | 설명 |\n|---|---|---|---|\n"
                   "| `payment_id` | string | 예 | 환불할 매입 결제 |\n"
                   "| `amount` | integer | 아니오 | 최소 통화 단위, 기본값은 환불 가능 잔액 |\n"
                   "| `reason` | enum | 아니오 | `duplicate`, `fraudulent`, `requested_by_customer` |\n"
                   "| `metadata` | object | 아니오 | 최대 20개 키, 웹훅에 그대로 전달 |"),
        ("example", "curl 예시:\n```bash\ncurl https://api.paylink.io/v1/refunds \\\n"
                    "  -H \"Authorization: Bearer sk_live_...\" \\\n  -H \"Idempotency-Key: refund-order-8812\" \\\n"
                    "  -d payment_id=pay_3KfQ2x -d amount=1500\n```"),
    )),
    Doc("paylink-api-webhooks", EN, "api", "PayLink", "v1", "Verify PayLink webhook signatures", (
        ("header", "Every webhook request carries a `PayLink-Signature` header of the form `t=1716890000,v1=5f2b...`. "
                   "`t` is the Unix time at which PayLink signed the event and `v1` is an HMAC-SHA256 of "
                   "`{t}.{raw body}` computed with your endpoint's signing secret."),
        ("rules", "Reject the event when the signature does not match or when `t` is more than 300 seconds away from "
                  "your server clock; the tolerance protects you from replayed events. Compare in constant time and "
                  "verify the raw body before parsing JSON. After you roll the signing secret, the old secret keeps "
                  "working for 24 hours."),
        ("example", "```python\nimport hashlib, hmac, time\n\ndef verify(raw_body: bytes, header: str, secret: str) "
                    "-> bool:\n    parts = dict(item.split(\"=\", 1) for item in header.split(\",\"))\n"
                    "    if abs(time.time() - int(parts[\"t\"])) > 300:\n        return False\n"
                    "    signed = parts[\"t\"].encode() + b\".\" + raw_body\n"
                    "    expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()\n"
                    "    return hmac.compare_digest(expected, parts[\"v1\"])\n```"),
    )),
    Doc("paylink-api-idempotency", EN, "api", "PayLink", "v1", "Idempotency keys", (
        ("overview", "Send an `Idempotency-Key` header (any unique string up to 255 characters; a UUID v4 works well) "
                     "with every POST request. If the connection drops, repeat the request with the same key and "
                     "PayLink returns the result of the first attempt instead of performing the operation twice."),
        ("rules", "Keys are kept for 24 hours. A replay with an identical body returns the stored response (PAY-2030); "
                  "a replay with a different body is rejected (PAY-2031). GET and DELETE requests are idempotent by "
                  "definition and ignore the header."),
    )),
    Doc("paylink-api-capture", EN, "api", "PayLink", "v1",
        "Capture an authorized payment — POST /v1/payments/{id}/capture", (
        ("overview", "Payments are captured automatically unless you create them with `capture_method=manual`. Manual "
                     "authorizations must be captured within 7 days; after that the hold on the card is released and "
                     "the payment moves to `expired`."),
        ("partial", "You may capture less than the authorized amount, and the rest of the hold is released at once. "
                    "Only one capture per authorization is allowed, so for split shipments create separate payments.\n"
                    "```bash\ncurl -X POST https://api.paylink.io/v1/payments/pay_3KfQ2x/capture \\\n"
                    "  -H \"Authorization: Bearer sk_live_...\" -d amount=8000\n```"),
    )),
    # --- Relay API reference ---
    Doc("relay-api-messages", KO, "api", "Relay", "v2", "메시지 발송 API v2 — POST /v2/messages", (
        ("overview", "`POST /v2/messages`는 알림 메시지를 한 요청에 1건부터 최대 1,000건까지 접수합니다. 접수된 메시지는 "
                     "비동기로 발송되고, 응답에는 건별 `message_id`가 들어 있습니다. 결과는 `message.delivered`, "
                     "`message.failed` 웹훅으로 받을 수 있습니다."),
        ("params", "요청 필드:\n\n| 필드 | 타입 | 필수 | 설명 |\n|---|---|---|---|\n"
                   "| `recipients` | array | 예 | 수신자 번호 목록, 최대 1,000개 |\n"
                   "| `template_id` | string | 예 | 검수 승인된 템플릿 ID |\n"
                   "| `variables` | object | 아니오 | 템플릿 변수 값 |\n"
                   "| `sender` | string | 예 | 사전 등록된 발신번호 |\n"
                   "| `fallback_sms` | boolean | 아니오 | 실패 시 문자 대체 발송, 기본값 false |"),
        ("example", "요청 예시:\n```bash\ncurl https://api.relay.co.kr/v2/messages \\\n"
                    "  -H \"Authorization: Bearer $RELAY_API_KEY\" \\\n  -H \"Content-Type: application/json\" \\\n"
                    "  -d '{\"recipients\": [\"01012345678\"], \"template_id\": \"order_shipped\", "
                    "\"sender\": \"0215880000\", \"variables\": {\"주문번호\": \"A-1029\"}}'\n```"),
    )),
    Doc("relay-api-messages", EN, "api", "Relay", "v2", "Send messages API v2 — POST /v2/messages", (
        ("overview", "`POST /v2/messages` accepts between 1 and 1,000 notification messages per request. Messages are "
                     "sent asynchronously and the response lists a `message_id` for each one; delivery results arrive "
                     "as `message.delivered` and `message.failed` webhooks."),
        ("params", "Request fields:\n\n| Field | Type | Required | Description |\n|---|---|---|---|\n"
                   "| `recipients` | array | yes | Phone numbers, at most 1,000 |\n"
                   "| `template_id` | string | yes | An approved template |\n"
                   "| `variables` | object | no | Values for the template variables |\n"
                   "| `sender` | string | yes | A pre-registered sender number |\n"
                   "| `fallback_sms` | boolean | no | Fall back to SMS on failure, default false |"),
    )),
    Doc("relay-api-rate-limits", KO, "api", "Relay", "v2", "Rate limit 응답 헤더", (
        ("headers", "모든 API 응답에는 `X-RateLimit-Limit`(초당 허용 요청 수), `X-RateLimit-Remaining`(현재 1초 구간에서 "
                    "남은 요청 수), `X-RateLimit-Reset`(구간이 초기화되는 Unix 시각) 헤더가 들어 있습니다. 하루 "
                    "발송량은 `X-DailyQuota-Remaining` 헤더로 따로 알려 줍니다."),
        ("retry_after", "한도를 넘으면 HTTP 429와 `Retry-After` 헤더가 옵니다. 초당 한도 초과(RLY-4290)에는 "
                        "`Retry-After: 1`처럼 짧은 값이, 일일 한도 소진(RLY-4291)에는 다음 00:00(KST)까지 남은 초가 "
                        "들어갑니다."),
    )),
    Doc("relay-api-migration", KO, "api", "Relay", "v1", "API v1 → v2 마이그레이션 가이드", (
        ("sunset", "Relay API v1(`POST /v1/send`)은 2024년 6월 30일에 종료됩니다. 종료 이후 v1 요청은 HTTP 410으로 "
                   "거부되므로 그 전에 v2로 전환해야 합니다."),
        ("fields", "필드 이름이 바뀝니다: `to` → `recipients`(배열), `msg` → `template_id`와 `variables`, `from` → "
                   "`sender`. v1은 한 요청에 1건만 보낼 수 있었지만 v2는 최대 1,000건을 받습니다."),
        ("auth", "인증 방식도 바뀝니다. v1의 쿼리 파라미터 `apikey`는 v2에서 지원하지 않으며 "
                 "`Authorization: Bearer <API 키>` 헤더를 써야 합니다."),
    )),
    # --- CloudVault CLI / API ---
    Doc("cv-cli-restore", EN, "api", "CloudVault", None, "cv CLI: restore a snapshot", (
        ("usage", "`cv restore` starts a restore job from a snapshot id. By default the data goes back to the original "
                  "volume; pass `--target` to restore into another volume and `--target-region` for a cross-region "
                  "restore, which is Enterprise-only and waits for a second admin's approval."),
        ("example", "```bash\ncv restore --snapshot snap-7f3a21 --target vol-0c9e --wait\n"
                    "cv restore --snapshot snap-7f3a21 --target-region ap-northeast-1 --reason \"DR drill\"\n```\n"
                    "`--wait` blocks until the job finishes and exits non-zero on failure, so it is safe in scripts."),
    )),
    Doc("cv-api-retention-lock", EN, "api", "CloudVault", None, "Retention lock API", (
        ("lock", "`PUT /v1/snapshots/{id}/lock` sets `locked_until` on a snapshot. A lock can be extended but never "
                 "shortened or removed, not even by the workspace owner.\n```bash\n"
                 "curl -X PUT https://api.cloudvault.io/v1/snapshots/snap-7f3a21/lock \\\n"
                 "  -H \"Authorization: Bearer $CV_TOKEN\" -d '{\"locked_until\": \"2025-12-31\"}'\n```"),
        ("legal_hold", "A legal hold (`PUT /v1/snapshots/{id}/legal-hold`) works like a lock without an end date: it "
                       "stays until a user with the Compliance role releases it with `DELETE` on the same path."),
    )),
    # --- Keystone API ---
    Doc("ks-api-scim", KO_EN, "api", "Keystone", None, "SCIM 2.0 provisioning", (
        ("endpoint", "Keystone은 SCIM 2.0 endpoint `https://{tenant}.keystone.io/scim/v2`를 제공합니다. SCIM은 "
                     "Enterprise plan에서만 쓸 수 있으며, IdP에 SCIM token을 등록하면 Users와 Groups가 자동으로 "
                     "동기화됩니다."),
        ("limits", "Rate limit은 tenant당 분당 600 requests입니다. 초과하면 HTTP 429와 KS-5121이 반환되고, email이 "
                   "중복되는 사용자는 KS-5120으로 거부됩니다."),
    )),
    Doc("ks-api-tokens", KO_EN, "api", "Keystone", None, "Admin API token", (
        ("issue", "Admin API token은 Settings → API tokens에서 발급하며, scope를 `users:read`, `users:write`, "
                  "`audit:read` 중에서 골라야 합니다. token은 발급 후 90일이 지나면 만료됩니다."),
        ("audit", "`audit:read` scope는 Security Admin만 부여할 수 있습니다. token 값은 발급 직후 한 번만 보여 주므로 "
                  "secret manager에 바로 저장하세요.\n```bash\ncurl https://acme.keystone.io/api/v1/audit-logs?since=7d \\\n"
                  "  -H \"Authorization: Bearer $KEYSTONE_TOKEN\"\n```"),
    )),
    # --- Pulse agent configuration: 2.x and 3.x renamed almost everything ---
    Doc("pulse-config-v2", EN, "manual", "Pulse", "2.x", "Pulse agent configuration reference (2.x)", (
        ("file", "Pulse 2.x reads its settings from `/etc/pulse/agent.yml`. The required keys are `api_key` and "
                 "`endpoint`; `flush_interval` sets how often buffered metrics are sent, in seconds (default 10). "
                 "Restart the agent with `systemctl restart pulse-agent` after every change."),
        ("logs", "Log collection is off by default in 2.x. Set `logs.enabled: true` and list files under "
                 "`logs.paths`; glob patterns such as `/var/log/nginx/*.log` work. Multi-line stack traces need "
                 "`logs.multiline_pattern`."),
        ("proxy", "To send data through an HTTP proxy, set the top-level `proxy` key, for example "
                  "`proxy: http://10.0.0.5:3128`. Proxy credentials go into the URL."),
        ("sample", "Sample `agent.yml`:\n```yaml\napi_key: \"${PULSE_API_KEY}\"\nendpoint: https://ingest.pulse.dev\n"
                   "flush_interval: 10\nproxy: http://10.0.0.5:3128\nlogs:\n  enabled: true\n  paths:\n"
                   "    - /var/log/nginx/*.log\ntags:\n  - env:prod\n```"),
    )),
    Doc("pulse-config-v3", EN, "manual", "Pulse", "3.x", "Pulse agent configuration reference (3.x)", (
        ("file", "Pulse 3.x reads `/etc/pulse/pulse.yaml`; the old `agent.yml` is ignored. Connection settings moved "
                 "under `exporter`: `exporter.endpoint`, `exporter.api_key` and `exporter.flush_interval_ms`, which "
                 "is now in milliseconds (default 15000)."),
        ("logs", "In 3.x logs are collected through pipelines: add a `filelog` receiver under "
                 "`pipelines.logs.receivers` with `include` patterns. The 2.x switch `logs.enabled` no longer exists, "
                 "and a pipeline without receivers collects nothing."),
        ("proxy", "The top-level `proxy` key of 2.x is silently ignored by 3.x. Set `exporter.proxy_url`, or export "
                  "`PULSE_PROXY` in the service environment; the environment variable wins when both are set."),
        ("sample", "Sample `pulse.yaml`:\n```yaml\nexporter:\n  endpoint: https://ingest.pulse.dev\n"
                   "  api_key: \"${PULSE_API_KEY}\"\n  flush_interval_ms: 15000\n  proxy_url: http://10.0.0.5:3128\n"
                   "pipelines:\n  logs:\n    receivers:\n      - filelog:\n          include: [/var/log/nginx/*.log]\n"
                   "tags:\n  env: prod\n```"),
    )),
    Doc("pulse-migration", EN, "manual", "Pulse", "3.x", "Upgrading the Pulse agent from 2.x to 3.x", (
        ("convert", "Run `pulse migrate-config /etc/pulse/agent.yml > /etc/pulse/pulse.yaml` before starting the 3.x "
                    "agent. The tool converts `endpoint`, `api_key`, `flush_interval` (seconds become "
                    "`flush_interval_ms`) and `tags`, and prints a warning for every key it cannot map."),
        ("manual_steps", "Two settings are not converted: `proxy` (set `exporter.proxy_url` by hand) and log "
                         "collection, which must be rebuilt as a `filelog` pipeline. Pulse 2.x reaches end of support "
                         "on 31 December 2024; it keeps sending data after that date but gets no security fixes."),
    )),
    # --- Orion firmware addendum: newer than the S2 manual, changes one of its statements ---
    Doc("orion-s2-fw24", KO, "manual", "Orion", "S2 FW 2.4", "Orion S2 펌웨어 2.4 추가 설명서", (
        ("thresholds", "펌웨어 2.4부터 Orion S2의 경고 임계값을 관리 콘솔(시스템 → 열 관리)에서 42~47°C 범위로 낮출 수 "
                       "있습니다. 비상 정지 임계값 52°C와 정지 지연 10초는 여전히 고정값입니다."),
        ("fan_mode", "2.4에서는 팬 모드에 '적응형'이 추가되어 흡기 온도 변화에 맞춰 팬 곡선을 스스로 조정합니다. 2.4 "
                     "미만 펌웨어에서는 이 메뉴가 보이지 않습니다."),
    )),
    Doc("orion-s2-fw24", EN, "manual", "Orion", "S2 FW 2.4", "Orion S2 firmware 2.4 manual addendum", (
        ("thresholds", "From firmware 2.4 the warning threshold of the Orion S2 can be lowered to anywhere between 42 "
                       "and 47°C in the management console (System → Thermal). The emergency shutdown threshold of "
                       "52°C and the 10-second delay remain fixed."),
        ("fan_mode", "Firmware 2.4 adds an Adaptive fan mode that tunes the fan curve to changes in inlet temperature. "
                     "The menu entry does not appear on firmware older than 2.4."),
    )),
    # --- How-to guides ---
    Doc("paylink-guide-declines", EN, "guide", "PayLink", None, "Handling declined payments in your checkout", (
        ("soft_hard", "Soft declines such as insufficient funds or a temporary issuer problem may succeed later; hard "
                      "declines will not. Branch on the error code rather than the HTTP status, because both kinds "
                      "reach you as ordinary error responses."),
        ("messaging", "Show one neutral message for every decline and offer another payment method. Never tell the "
                      "customer that the card was reported stolen or that the bank flagged them; only the issuer may "
                      "explain the reason."),
        ("attempts", "Count customer-initiated attempts separately from automatic ones. Card networks watch how often "
                     "the same card is tried within 24 hours, so a shopper pressing the pay button again and again "
                     "also counts against your merchant account."),
    )),
    Doc("paylink-guide-3ds", EN, "guide", "PayLink", None, "3-D Secure authentication", (
        ("flow", "PayLink starts 3-D Secure automatically when the issuer asks for it. The payment moves to "
                 "`requires_action` and the response carries `next_action.redirect_url`, which the customer must "
                 "open to authenticate with their bank."),
        ("timeout", "If the customer does not finish authentication within 15 minutes, the payment expires and "
                    "nothing is captured. Fraud liability shifts to the issuer only for payments that completed "
                    "3-D Secure."),
    )),
    Doc("paylink-guide-going-live", EN, "guide", "PayLink", None, "Going live with PayLink", (
        ("checks", "Before switching to live keys, verify your webhook endpoint with the live signing secret, make "
                   "sure retries reuse their idempotency keys, and test both soft and hard declines in your checkout."),
        ("accounts", "Live keys start with `sk_live_`. Turn on two-factor login for every dashboard user with the "
                     "Finance or Admin role: PayLink blocks live refunds and manual credits for users without it."),
    )),
    Doc("cv-guide-policies", EN, "guide", "CloudVault", None, "Backup policies and schedules", (
        ("definition", "A backup policy sets the schedule (hourly, daily or weekly), the volumes or agents it covers "
                       "and the encryption key. Retention follows your plan unless the policy sets a shorter value."),
        ("frequency", "Policies run at most once an hour. Snapshots inherit the policy's retention lock setting when "
                      "they are taken; changing the policy later does not touch existing snapshots."),
    )),
    Doc("cv-guide-file-restore", EN, "guide", "CloudVault", None, "Restoring individual files", (
        ("browse", "To get single files back instead of a whole volume, open the snapshot in the web console and "
                   "choose Browse. You can download up to 5 GB per request as a zip archive."),
        ("regions", "File-level downloads work from any region on every plan, because the data is streamed to your "
                    "browser instead of being written to a volume in another region; the download is billed as "
                    "egress."),
    )),
    Doc("orion-guide-rack", KO, "guide", "Orion", None, "Orion 랙 설치 가이드", (
        ("rails", "Orion S1과 S2는 1U 높이로 표준 19인치 랙에 설치합니다. 레일 키트는 깊이 600~800mm 랙에 맞고, 장비 "
                  "무게는 S1이 9kg, S2가 12kg입니다."),
        ("airflow", "흡기는 전면, 배기는 후면입니다. 배기구가 다른 장비의 흡기구를 마주 보지 않게 배치하고, 빈 랙 "
                    "슬롯에는 블랭킹 패널을 달아 뜨거운 공기가 앞으로 되돌아오지 않게 하세요."),
    )),
    Doc("orion-guide-rack", EN, "guide", "Orion", None, "Orion rack installation guide", (
        ("rails", "Orion S1 and S2 are 1U units for standard 19-inch racks. The rail kit fits racks 600 to 800 mm "
                  "deep; the S1 weighs 9 kg and the S2 12 kg."),
        ("airflow", "Air enters at the front and leaves at the back. Do not let the exhaust face another device's "
                    "intake, and fit blanking panels in empty rack slots so hot air cannot circulate back to the "
                    "front."),
    )),
    Doc("ks-guide-saml", KO_EN, "guide", "Keystone", None, "SAML SSO 설정 가이드", (
        ("connect", "IdP에 Keystone을 SAML application으로 등록하고 ACS URL `https://{tenant}.keystone.io/sso/saml/acs`와 "
                    "Entity ID를 입력하세요. IdP metadata XML을 Keystone Settings → SSO에 업로드하면 연결이 끝납니다."),
        ("before_enforce", "SSO를 enforce하기 전에 관리자 한 명 이상이 SSO로 로그인에 성공했는지 확인하세요. enforce하는 "
                           "순간 password로 로그인한 기존 session은 모두 종료됩니다."),
    )),
    Doc("relay-guide-start", KO, "guide", "Relay", None, "Relay 시작하기", (
        ("steps", "Relay로 발송하려면 콘솔에서 발신 프로필을 만들고, 발신번호를 등록하고, 메시지 템플릿 검수를 받아야 "
                  "합니다. 세 단계가 모두 끝나야 API로 보낼 수 있습니다."),
        ("keys", "API 키는 콘솔의 설정 → API 키에서 발급합니다. 운영 키와 샌드박스 키가 따로 있으며, 샌드박스 키로 보낸 "
                 "요청은 실제로 발송되지 않습니다."),
    )),
    Doc("pulse-guide-alerts", EN, "guide", "Pulse", None, "Pulse alert rules", (
        ("evaluation", "Alert rules evaluate a metric query every minute. A rule fires once its condition has held for "
                       "the rule's `for` duration (5 minutes by default) and resolves after it has been false for the "
                       "same duration."),
        ("channels", "Notifications go to email, Slack or a webhook. The Developer plan allows 5 alert rules; Team "
                     "and Business have no limit."),
    )),
    Doc("pulse-guide-install", EN, "guide", "Pulse", "3.x", "Installing the Pulse agent", (
        ("install", "Install the 3.x agent with `curl -fsSL https://get.pulse.dev | sh -s -- --version 3`. The "
                    "installer writes a default `/etc/pulse/pulse.yaml` and starts the `pulse-agent` service."),
        ("upgrade", "On hosts that still run 2.x the installer stops and asks you to run `pulse migrate-config` "
                    "first, so an upgrade never starts with an empty configuration."),
    )),
    # --- Announcements: summarise what changed between editions, so temporal answers live on two pages ---
    Doc("cloudvault-pricing-2024", EN, "announcement", "CloudVault", "2024", "CloudVault pricing update, April 2024", (
        ("retention", "From 1 April 2024 CloudVault plans keep snapshots longer: Basic goes from 7 to 30 days, Pro "
                      "from 30 to 90 days and Enterprise from 90 to 365 days. Contracts signed under the 2023 price "
                      "list keep their terms until the next renewal."),
        ("points", "Restore-point allowances grow as well: Basic from 20 to 50, Pro from 200 to 500, and Enterprise "
                   "becomes unlimited. List prices rise by 2 USD per TB on Basic and Pro."),
    )),
    Doc("paylink-pricing-2024", EN, "announcement", "PayLink", "2024", "PayLink 2024 pricing announcement", (
        ("fees", "PayLink's 2024 price list takes effect on 1 April 2024. Card fees drop on every plan: Starter from "
                 "3.4% to 3.2%, Growth from 3.2% to 2.9% and Scale from 2.9% to 2.5%, each plus 0.30 USD."),
        ("payouts", "Payouts get faster too: Starter moves from D+7 to D+3, Growth from D+3 to D+1, and Scale from D+1 "
                    "to same-day payouts. Monthly fees rise to 49 USD on Growth and 299 USD on Scale."),
    )),
    Doc("paylink-pricing-2024", KO, "announcement", "PayLink", "2024", "PayLink 2024년 요금 개편 안내", (
        ("fees", "PayLink 2024년 요금표는 2024년 4월 1일부터 적용됩니다. 모든 요금제의 카드 수수료가 내려갑니다: "
                 "Starter 3.4% → 3.2%, Growth 3.2% → 2.9%, Scale 2.9% → 2.5% (각각 건당 300원 별도)."),
        ("payouts", "정산도 빨라집니다. Starter는 D+7에서 D+3으로, Growth는 D+3에서 D+1로, Scale은 D+1에서 당일 "
                    "정산으로 바뀝니다. 월 기본료는 Growth 49달러, Scale 299달러로 오릅니다."),
    )),
    Doc("relay-pricing-2024", KO, "announcement", "Relay", "2024", "Relay 2024년 요금 개편 안내", (
        ("rate", "2024년 1월 1일부터 모든 요금제의 초당 발송 한도가 늘어납니다. 스타터는 5건에서 10건, 비즈니스는 "
                 "10건에서 50건, 엔터프라이즈는 50건에서 200건이 됩니다."),
        ("daily", "하루 발송량도 스타터 5,000건 → 10,000건, 비즈니스 10,000건 → 100,000건, 엔터프라이즈 100,000건 → "
                  "1,000,000건으로 늘어나고, 건당 요금은 1원씩 내려갑니다."),
    )),
    Doc("orion-s2-launch", KO, "announcement", "Orion", "S2", "Orion S2 출시 안내 (2023)", (
        ("summary", "Orion S2는 2023년 3월에 나온 S1의 후속 모델입니다. 이중화 PSU와 hot-swap 팬을 갖췄고, 펌웨어는 "
                    "웹 관리 콘솔에서 올릴 수 있습니다. S1은 2024년 말까지 판매하고 2026년까지 부품을 공급합니다."),
        ("thermal", "S2는 냉각 설계를 바꿔 S1보다 더운 환경에서도 운영할 수 있습니다. 정확한 온도 기준과 비상 정지 "
                    "조건은 모델별 설치 및 운영 설명서를 확인하세요."),
    )),
    Doc("orion-s2-launch", EN, "announcement", "Orion", "S2", "Introducing the Orion S2 (2023)", (
        ("summary", "The Orion S2, released in March 2023, succeeds the S1. It adds redundant PSUs and hot-swappable "
                    "fans, and its firmware is updated from the web management console. The S1 stays on sale until "
                    "the end of 2024, with spare parts until 2026."),
        ("thermal", "A redesigned cooling path lets the S2 run in warmer rooms than the S1. See each model's "
                    "installation and operation manual for the exact temperature limits and shutdown behaviour."),
    )),
    # --- FAQs (some answer questions, most are background) ---
    Doc("paylink-faq-payments", EN, "faq", "PayLink", None, "PayLink payments FAQ", (
        ("pending_refund", "Why does a refund still show as pending? Refunds are asynchronous. Most complete within "
                           "minutes, but some card issuers take up to 10 business days to show the credit on the "
                           "cardholder's statement."),
        ("currency", "Can I change the currency of a payment after creating it? No. Cancel the authorization and "
                     "create a new payment in the right currency; captured payments cannot be converted."),
        ("test_mode", "Do test-mode payments count toward plan limits? No. Test mode is free and isolated; test keys "
                      "start with `sk_test_` and never move real money."),
    )),
    Doc("paylink-faq-payouts", KO, "faq", "PayLink", None, "PayLink 정산 FAQ", (
        ("amount", "정산 금액이 결제 금액보다 적은 이유는 무엇인가요? 정산금은 결제 금액에서 수수료와 환불·차지백 금액을 "
                   "뺀 값입니다. 건별 내역은 대시보드의 정산 리포트에서 확인할 수 있습니다."),
        ("account", "정산 계좌는 어떻게 바꾸나요? 대표자 본인 인증 후 대시보드에서 변경할 수 있으며, 변경 후 첫 정산은 "
                    "보안 검토 때문에 하루 늦어질 수 있습니다."),
        ("weekend", "주말에도 정산되나요? 정산은 영업일에만 이루어집니다. D+1 정산이라도 금요일 매입분은 다음 주 "
                    "월요일에 입금됩니다."),
    )),
    Doc("orion-faq", KO, "faq", "Orion", None, "Orion 자주 묻는 질문", (
        ("console", "관리 콘솔 기본 주소가 어떻게 되나요? 관리 포트에 노트북을 연결하고 https://192.168.100.1 로 "
                    "접속하세요. 초기 계정은 admin이며 처음 로그인할 때 비밀번호를 바꿔야 합니다."),
        ("desk", "랙 없이 책상 위에 두고 써도 되나요? 가능합니다. 바닥 흡기구가 막히지 않도록 고무 받침을 꼭 붙이고, "
                 "벽과 15cm 이상 떨어뜨려 두세요."),
        ("noise", "소음이 너무 커요. 팬 모드를 확인하세요. '성능' 모드로 되어 있다면 '자동'으로 바꾸기만 해도 소음이 "
                  "크게 줄어듭니다."),
    )),
    Doc("orion-faq", EN, "faq", "Orion", None, "Orion FAQ", (
        ("mixing", "Can S1 and S2 units share a cluster? Yes for workloads, but cluster features such as rolling "
                   "firmware updates only work across S2 units."),
        ("noise", "How loud is the unit? About 45 dBA at one metre in Auto mode with a 25°C inlet; Performance mode "
                  "can exceed 60 dBA."),
        ("serial", "Where is the serial number? On the pull-out tag at the front right, and under System → "
                   "Information in the management console."),
    )),
    Doc("cv-faq-backups", EN, "faq", "CloudVault", None, "CloudVault backup FAQ", (
        ("incremental", "Are snapshots incremental? Yes. After the first full snapshot only changed blocks are "
                        "uploaded, but every snapshot can be restored on its own."),
        ("export", "Can I download a snapshot as a file? Yes, with `cv export --format tar`; exports are billed as "
                   "egress."),
        ("databases", "Are databases backed up consistently? Use pre-snapshot hooks to flush and freeze the database; "
                      "without hooks, snapshots are only crash-consistent."),
    )),
    Doc("cv-faq-billing", EN, "faq", "CloudVault", None, "CloudVault billing FAQ", (
        ("storage", "How is storage billed? On the average volume stored during the month, measured daily, at the "
                    "per-TB rate of your plan."),
        ("deleted", "Do deleted snapshots stop costing money right away? Within 24 hours. Locked snapshots keep "
                    "being billed until their lock expires."),
        ("egress", "Are restores charged for egress? Restores inside the same region are free; cross-region restores "
                   "and exports are billed per GB."),
    )),
    Doc("ks-faq", KO_EN, "faq", "Keystone", None, "Keystone FAQ", (
        ("password", "사용자가 password를 잊어버렸어요. SSO를 쓰지 않는 조직이라면 로그인 화면의 'Forgot password'로 "
                     "직접 재설정할 수 있습니다. SSO가 enforce된 조직은 IdP에서 재설정해야 합니다."),
        ("idp_switch", "IdP를 바꾸려면 어떻게 하나요? 새 IdP를 추가 connection으로 등록해 테스트한 뒤 기본 connection을 "
                       "전환하세요. 전환하는 동안에도 기존 session은 유지됩니다."),
        ("session", "session은 얼마나 유지되나요? 기본값은 12시간이며, Enterprise plan에서는 1~72시간 사이로 조정할 수 "
                    "있습니다."),
    )),
    Doc("relay-faq", KO, "faq", "Relay", None, "Relay 자주 묻는 질문", (
        ("status", "메시지가 발송됐는지 어떻게 확인하나요? 콘솔의 발송 내역에서 건별 상태를 보거나 message.delivered "
                   "웹훅을 받아 처리하세요. 결과는 최대 72시간까지 갱신됩니다."),
        ("length", "긴 메시지는 몇 자까지 보낼 수 있나요? 알림 메시지는 최대 1,000자, 문자(LMS) 대체 발송은 "
                   "2,000바이트까지입니다."),
        ("test", "테스트 발송에도 요금이 붙나요? 콘솔 테스트 발송은 하루 20건까지 무료이고, API 샌드박스 키로 보낸 "
                 "요청은 실제로 발송되지 않습니다."),
    )),
    Doc("pulse-faq", EN, "faq", "Pulse", None, "Pulse agent FAQ", (
        ("cpu", "How much CPU does the agent use? Usually under 1% of one core with default settings; log pipelines "
                "with heavy parsing can use more."),
        ("buffer", "Does the agent buffer data during network outages? Yes, up to 100 MB on disk by default; beyond "
                   "that the oldest data is dropped."),
        ("side_by_side", "Can 2.x and 3.x agents run side by side? Not on the same host: both bind local port 8125."),
    )),
    # --- Troubleshooting checklists: generic, overlap with every symptom question, never judged ---
    Doc("paylink-checklist", EN, "checklist", "PayLink", None, "Checklist: card payment failures", (
        ("first", "When a card payment fails, read the error code in the response rather than the message text. "
                  "Timeouts, issuer declines and idempotency conflicts need different handling, and automatic retries "
                  "are only safe for some of them. Log the `request_id` of every failed attempt."),
        ("before_support", "Before contacting support, check whether the payment is still pending or failed, how many "
                           "retries your integration sent and with which idempotency key, whether the issuer returned "
                           "a decline code, and whether failures cluster around the midnight bank maintenance window."),
    )),
    Doc("orion-checklist", KO, "checklist", "Orion", None, "Orion 장비 이상 점검 체크리스트", (
        ("first", "장비 상태 LED가 주황색이나 빨간색이면 먼저 관리 콘솔 이벤트 로그에서 이벤트 코드를 확인하세요. 온도, "
                  "전원, 팬, 펌웨어 관련 코드는 조치 방법이 서로 다르며, 어떤 상황에서는 전원을 끄면 오히려 문제가 "
                  "커집니다."),
        ("order", "점검 순서: 흡기 온도와 랙 공기 흐름 → PSU 상태와 이중화 여부 → 팬 회전 속도 → 최근 펌웨어 업데이트 "
                  "이력. 기술 지원에 문의할 때는 시리얼 번호와 이벤트 로그를 함께 보내 주세요."),
    )),
    Doc("cv-checklist", EN, "checklist", "CloudVault", None, "Checklist: failed backups and restores", (
        ("first", "If a backup or restore fails, look at the error code first. Quota, retention locks, encryption "
                  "keys and agent tokens each fail with their own code, and re-running the job rarely helps until the "
                  "cause is fixed."),
        ("restore", "For restores, confirm the target volume size and region, whether the snapshot is locked, and that "
                    "the encryption key is enabled in your KMS. For agents, confirm the token is valid and that the "
                    "host can reach the CloudVault endpoint."),
    )),
    Doc("ks-checklist", KO_EN, "checklist", "Keystone", None, "로그인 문제 점검 체크리스트", (
        ("first", "사용자가 로그인하지 못하면 화면에 표시된 KS 코드부터 확인하세요. SSO assertion, MFA, recovery code "
                  "문제는 해결하는 사람이 다릅니다. 사용자 본인, Org Admin, Security Admin, Owner 중 누가 조치해야 "
                  "하는지 먼저 구분하세요."),
        ("often_missed", "자주 놓치는 항목: IdP 서버 시간 동기화, 브라우저 뒤로 가기로 인한 재전송, MFA 코드 연속 오류로 "
                         "인한 잠금, 만료된 recovery code 세트, SCIM으로 중복 생성된 계정."),
    )),
    Doc("relay-checklist", KO, "checklist", "Relay", None, "Relay 발송 실패 점검 체크리스트", (
        ("first", "메시지가 발송되지 않으면 응답의 RLY 오류 코드를 먼저 확인하세요. 한도 초과, 수신 거부, 템플릿, "
                  "발신번호 문제는 처리 방법이 다르며, 어떤 오류는 다시 보내면 법적 문제가 생길 수 있습니다."),
        ("order", "점검 순서: 초당·일일 발송 한도 → 수신자의 수신 동의 상태 → 템플릿 검수 상태와 변수 → 발신번호 "
                  "등록·차단 여부. 재시도 로직은 오류 코드별로 나눠서 만들어야 합니다."),
    )),
)


# ---------------------------------------------------------------------------------------------------------------------
# Questions. Error codes get one question naming the code and one describing the symptom; the rest is hand-written.
# ---------------------------------------------------------------------------------------------------------------------

EXACT_ID_TEMPLATES = {  # (aspect, language) -> phrasings; the aspect decides which section answers
    ("fix", EN): ("What should we do when {product} reports {code}?", "{product} {code}: what is the recommended "
                  "handling?", "How do I resolve {code}?"),
    ("fix", KO): ("{product} {code} 오류가 나면 어떻게 조치해야 하나요?", "{code}에 어떻게 대응해야 하나요?",
                  "{product}에서 {code} 해결 방법 알려 주세요"),
    ("fix", CS): ("{product}에서 {code} 떴을 때 handling 어떻게 해요?", "{code} fix 방법 있나요?",
                  "{product} {code} 나오면 troubleshooting 어떻게 해요?"),
    ("overview", EN): ("What does {product} error {code} mean?", "What causes {code}?",
                       "Can you explain what {code} indicates in {product}?"),
    ("overview", KO): ("{product} {code} 오류는 무슨 뜻인가요?", "{code} 오류는 왜 발생하나요?",
                       "{product}의 {code} 코드가 의미하는 게 뭐예요?"),
    ("overview", CS): ("{product} {code} error가 정확히 뭐예요?", "{code} root cause가 뭔가요?",
                       "{product}에서 {code} 뜨는 이유가 뭐죠?"),
}
# Retry questions only make sense for request-based products, not for a hardware event like a missing fan.
RETRY_TEMPLATES = {
    EN: ("Is it safe to retry a request that failed with {code}?", "{product} returned {code}. Can we just retry?"),
    KO: ("{code} 발생 시 다시 시도해도 되나요?", "{product}에서 {code} 오류가 났는데 재요청해도 되나요?"),
    CS: ("{code} 에러 재시도 해도 돼?", "{product} {code} 나오면 바로 retry 해도 되나요?"),
}
DEVICE_PRODUCTS = ("Orion",)
COMPARISON_TEMPLATES = {
    EN: "{a} vs {b}: how do they differ, and can we retry either one?",
    KO: "{a}, {b} 두 오류는 어떻게 다른가요? 처리 방법도 다른가요?",
    CS: "{a}하고 {b} 차이가 뭐예요? 둘 다 retry 해도 돼요?",
}
# Twin pairs that also get a comparison question, with the question's language.
COMPARED_PAIRS = (("PAY-1041", CS), ("PAY-2030", EN), ("ORN-E305", KO), ("ORN-E520", EN), ("CV-815", EN),
                  ("CV-033", CS), ("KS-3301", KO), ("RLY-6001", CS), ("RLY-4290", EN))


def _error_code_questions(rng: random.Random) -> list[Q]:
    twin_of = {}
    for a, b in _twin_pairs():
        twin_of[a.code], twin_of[b.code] = b.code, a.code
    questions = []
    for i, err in enumerate(ERROR_CODES):
        code, twin = err.code, twin_of[err.code]
        # exact_id: the code is named, so every translation is reachable; the twin page is on topic (1).
        # Every third code is asked about in each language; every fourth asks what it means rather than what to do
        # (4 and 3 are coprime, so both aspects occur in every language).
        language = QUERY_LANGUAGES[(i + 1) % 3]
        aspect = "overview" if i % 4 == 3 else "fix"
        other = "fix" if aspect == "overview" else "overview"
        phrasings = EXACT_ID_TEMPLATES[(aspect, language)]
        if aspect == "fix" and err.product not in DEVICE_PRODUCTS:
            phrasings += RETRY_TEMPLATES[language]
        text = rng.choice(phrasings).format(code=code, product=err.product)
        questions.append(Q(language, "exact_id", text, (
            (code, aspect, 3), (code, other, 1), (code, "example", 1), (twin, aspect, 1), (twin, other, 0))))
        # troubleshooting: no code in the question; the twin's fix reads almost the same and is judged 1, its
        # overview describes a similar symptom and is judged a hard negative (0).
        language, text = err.symptom
        questions.append(Q(language, "troubleshooting", text, (
            (code, "fix", 3), (code, "overview", 2), (twin, "fix", 1), (twin, "overview", 0))))
    for code, language in COMPARED_PAIRS:
        twin = twin_of[code]
        text = COMPARISON_TEMPLATES[language].format(a=code, b=twin)
        questions.append(Q(language, "comparison", text, (
            (code, "overview", 2), (code, "fix", 2), (twin, "overview", 2), (twin, "fix", 2),
            (code, "example", 1), (twin, "example", 1))))
    return questions


def _q(language: str, intent: str, text: str, *judgments: tuple[str, str | None, int]) -> Q:
    return Q(language, intent, text, tuple(judgments))


HAND_WRITTEN_QUESTIONS: tuple[Q, ...] = (
    # --- exact_id on identifiers other than error codes ---
    _q(EN, "exact_id", "What format does the PayLink-Signature header use?",
       ("paylink-api-webhooks", "header", 3), ("paylink-api-webhooks", "rules", 1),
       ("paylink-api-webhooks", "example", 2)),
    _q(CS, "exact_id", "`Idempotent-Replayed` 헤더가 true로 오는 건 무슨 의미예요?",
       ("PAY-2030", "overview", 3), ("PAY-2030", "fix", 2), ("paylink-api-idempotency", "rules", 2),
       ("PAY-2031", "overview", 1)),
    _q(KO, "exact_id", "X-DailyQuota-Remaining 헤더는 무엇을 알려 주나요?",
       ("relay-api-rate-limits", "headers", 3), ("relay-api-rate-limits", "retry_after", 1)),
    _q(EN, "exact_id", "Default value of exporter.flush_interval_ms in the Pulse agent?",
       ("pulse-config-v3", "file", 3), ("pulse-config-v3", "sample", 2), ("pulse-migration", "convert", 1),
       ("pulse-config-v2", "file", 1)),
    _q(CS, "exact_id", "`cv restore --target-region` 옵션 쓰려면 조건이 뭐예요?",
       ("cv-cli-restore", "usage", 3), ("cv-cross-region", "eligibility", 3), ("CV-816", "fix", 2),
       ("cv-cli-restore", "example", 1)),
    _q(EN, "exact_id", "What does the locked_until field on a CloudVault snapshot mean?",
       ("cv-api-retention-lock", "lock", 3), ("CV-702", "overview", 2), ("cv-retention-lock", "immutability", 2),
       ("CV-702", "fix", 2)),
    _q(KO, "exact_id", "POST /v2/messages 한 번에 최대 몇 건까지 보낼 수 있어요?",
       ("relay-api-messages", "overview", 3), ("relay-api-messages", "params", 3),
       ("relay-api-migration", "fields", 2)),
    _q(EN, "exact_id", "What happens if a payment created with capture_method=manual is never captured?",
       ("paylink-api-capture", "overview", 3), ("paylink-api-capture", "partial", 1)),
    _q(CS, "exact_id", "Keystone `audit:read` scope는 누가 줄 수 있어요?",
       ("ks-api-tokens", "audit", 3), ("ks-admin-roles", "table", 2), ("ks-api-tokens", "issue", 1)),
    _q(KO, "exact_id", "pulse migrate-config 명령은 어떤 설정을 변환해 주나요?",
       ("pulse-migration", "convert", 3), ("pulse-migration", "manual_steps", 2)),
    _q(EN, "exact_id", "What is next_action.redirect_url in a PayLink payment response?",
       ("paylink-guide-3ds", "flow", 3), ("paylink-guide-3ds", "timeout", 1)),
    _q(EN, "exact_id", "What does pulse migrate-config do with the proxy key?",
       ("pulse-migration", "manual_steps", 3), ("pulse-migration", "convert", 2), ("pulse-config-v3", "proxy", 2),
       ("pulse-guide-install", "upgrade", 1)),
    _q(CS, "exact_id", "Keystone SAML 연동할 때 ACS URL 뭐 넣어요?",
       ("ks-guide-saml", "connect", 3), ("ks-guide-saml", "before_enforce", 1)),
    _q(EN, "exact_id", "Where do I find refundable_amount and what does it include?",
       ("PAY-3107", "fix", 3), ("PAY-3107", "overview", 2), ("paylink-api-refunds", "params", 1)),
    # --- troubleshooting without an error code ---
    _q(KO, "troubleshooting", "Orion 장비 앞쪽 불이 파란색으로 깜박거려요. 무슨 상태인가요?",
       ("orion-manual-S2", "leds", 3), ("orion-manual-S1", "leds", 1)),
    _q(EN, "troubleshooting", "Our Orion S2 sits in a cabinet that reaches 38 degrees in summer. Is that within "
                              "its supported range?",
       ("orion-manual-S2", "environment", 3), ("orion-manual-S1", "environment", 1)),
    _q(CS, "troubleshooting", "Pulse 3로 upgrade 한 뒤로 log가 하나도 안 들어와요. config에서 뭘 바꿔야 하죠?",
       ("pulse-config-v3", "logs", 3), ("pulse-migration", "manual_steps", 2), ("pulse-config-v2", "logs", 1),
       ("pulse-config-v3", "sample", 1)),
    _q(EN, "troubleshooting", "Webhook signature checks fail only on one of our servers, the one whose clock "
                              "drifts. Why would that be?",
       ("paylink-api-webhooks", "rules", 3), ("paylink-api-webhooks", "header", 2),
       ("paylink-api-webhooks", "example", 1)),
    _q(KO, "troubleshooting", "Relay v1 API로 보내던 발송 요청이 7월부터 전부 410으로 실패해요. 왜 그런 거죠?",
       ("relay-api-migration", "sunset", 3), ("relay-api-migration", "fields", 1),
       ("relay-api-messages", "overview", 1)),
    _q(CS, "troubleshooting", "Orion 장비 fan 소리가 너무 시끄러워요. 설정에서 줄일 수 있나요?",
       ("orion-faq", "noise", 3), ("orion-manual-S2", "fans", 2), ("orion-manual-S1", "fans", 2)),
    _q(EN, "troubleshooting", "A refund was created days ago but the customer still doesn't see the money. Is "
                              "something broken?",
       ("paylink-faq-payments", "pending_refund", 3), ("paylink-api-refunds", "overview", 2)),
    _q(EN, "troubleshooting", "Shoppers who close the bank's verification window end up with nothing charged. How "
                              "long do they have to finish it?",
       ("paylink-guide-3ds", "timeout", 3), ("paylink-guide-3ds", "flow", 2)),
    _q(EN, "troubleshooting", "After a decline, a shopper keeps hitting the pay button over and over. Could that "
                              "hurt us?",
       ("paylink-guide-declines", "attempts", 3), ("PAY-1042", "fix", 2), ("paylink-guide-declines", "soft_hard", 1)),
    _q(EN, "troubleshooting", "We only need one config file from last week's backup, not the whole disk. How do we "
                              "get it?",
       ("cv-guide-file-restore", "browse", 3), ("cv-cli-restore", "usage", 1)),
    _q(EN, "troubleshooting", "We tried to schedule backups every 15 minutes and it won't accept it. Why?",
       ("cv-guide-policies", "frequency", 3), ("cv-guide-policies", "definition", 1)),
    _q(EN, "troubleshooting", "Our CPU alert only goes off several minutes after the spike. What decides the delay?",
       ("pulse-guide-alerts", "evaluation", 3), ("pulse-guide-alerts", "channels", 1)),
    _q(EN, "troubleshooting", "The installer refuses to continue on a server that still has the old agent. What is "
                              "it waiting for?",
       ("pulse-guide-install", "upgrade", 3), ("pulse-migration", "convert", 2),
       ("pulse-guide-install", "install", 1)),
    _q(EN, "troubleshooting", "Right after we switched on enforced SSO, every admin was signed out. Is that "
                              "expected?",
       ("ks-guide-saml", "before_enforce", 3), ("ks-sso-enforcement", "scope", 2)),
    _q(EN, "troubleshooting", "Warm exhaust from the back of our appliance seems to reach its own front vents. How "
                              "should it be placed in the rack?",
       ("orion-guide-rack", "airflow", 3), ("orion-manual-S2", "environment", 1),
       ("orion-manual-S1", "environment", 1)),
    _q(KO, "troubleshooting", "랙 뒤로 나간 더운 바람이 다시 앞쪽으로 빨려 들어가는 것 같아요. 배치를 어떻게 바꿔야 "
                              "하나요?",
       ("orion-guide-rack", "airflow", 3), ("orion-manual-S2", "environment", 1),
       ("orion-manual-S1", "environment", 1)),
    _q(EN, "troubleshooting", "A finance teammate cannot issue a live refund from the dashboard at all. What is "
                              "missing?",
       ("paylink-guide-going-live", "accounts", 3), ("paylink-refund-policy", "window", 1)),
    # --- temporal: the current page against the superseded one ---
    _q(EN, "temporal", "With today's CloudVault pricing, how far back can a Pro workspace restore from?",
       ("cloudvault-plans-2024", "pro", 3), ("cloudvault-plans-2024", "table", 3),
       ("cloudvault-plans-2023", "pro", 1), ("cloudvault-plans-2023", "table", 1), ("keystone-plans-2024", "pro", 0),
       ("cloudvault-pricing-2024", "retention", 3)),
    _q(CS, "temporal", "2023년에 계약한 CloudVault Enterprise는 snapshot 보관 기간이 며칠이었어요?",
       ("cloudvault-plans-2023", "enterprise", 3), ("cloudvault-plans-2023", "table", 3),
       ("cloudvault-plans-2024", "enterprise", 1), ("cloudvault-plans-2024", "table", 1),
       ("cloudvault-plans-2024", "pro", 0), ("cloudvault-pricing-2024", "retention", 3)),
    _q(EN, "temporal", "We signed with CloudVault in 2023 on Basic. Has the snapshot retention of that tier changed "
                       "since?",
       ("cloudvault-plans-2023", "basic", 2), ("cloudvault-plans-2024", "basic", 2),
       ("cloudvault-plans-2023", "table", 2), ("cloudvault-plans-2024", "table", 2),
       ("cloudvault-pricing-2024", "retention", 3)),
    _q(EN, "temporal", "How much does PayLink take per card transaction on Growth these days?",
       ("paylink-plans-2024", "growth", 3), ("paylink-plans-2024", "table", 3), ("paylink-plans-2023", "growth", 1),
       ("paylink-plans-2023", "table", 1), ("paylink-plans-2024", "starter", 0), ("paylink-pricing-2024", "fees", 3)),
    _q(KO, "temporal", "PayLink Starter 정산이 예전에는 D+7이었는데 지금은 며칠 걸리나요?",
       ("paylink-plans-2024", "starter", 3), ("paylink-plans-2024", "table", 3), ("paylink-plans-2023", "starter", 1),
       ("paylink-plans-2023", "table", 1), ("paylink-pricing-2024", "payouts", 3)),
    _q(EN, "temporal", "Since when are PayLink Scale merchants paid out on the same day?",
       ("paylink-plans-2024", "scale", 3), ("paylink-plans-2024", "table", 3), ("paylink-plans-2023", "scale", 1),
       ("paylink-pricing-2024", "payouts", 3), ("paylink-pricing-2024", "fees", 2)),
    _q(KO, "temporal", "Relay 비즈니스 쓰는데 요즘은 1초에 몇 통까지 보낼 수 있어요?",
       ("relay-plans-2024", "business", 3), ("relay-plans-2024", "table", 3), ("relay-plans-2023", "business", 1),
       ("relay-plans-2023", "table", 1), ("relay-plans-2023", "enterprise", 0), ("relay-pricing-2024", "rate", 3)),
    _q(CS, "temporal", "Relay 2023 요금표 기준 스타터 daily limit이 몇 건이었죠?",
       ("relay-plans-2023", "starter", 3), ("relay-plans-2023", "table", 3), ("relay-plans-2024", "starter", 1),
       ("relay-plans-2024", "table", 1), ("relay-pricing-2024", "daily", 3)),
    _q(KO, "temporal", "Orion S2는 흡기 온도가 몇 도가 되면 비상 정지하나요?",
       ("orion-manual-S2", "shutdown", 3), ("orion-s2-fw24", "thresholds", 2), ("orion-manual-S1", "shutdown", 1)),
    _q(EN, "temporal", "How hot can the air going into the newest Orion get before it cuts its own power?",
       ("orion-manual-S2", "shutdown", 3), ("orion-s2-fw24", "thresholds", 2), ("orion-manual-S1", "shutdown", 1)),
    _q(KO, "temporal", "Orion S2도 소프트웨어를 올릴 때 USB 메모리를 꽂아야 하나요?",
       ("orion-manual-S2", "firmware", 3), ("orion-manual-S1", "firmware", 1), ("orion-s2-launch", "summary", 2)),
    _q(CS, "temporal", "Orion S2 초기화하려면 뒤쪽 버튼을 얼마나 누르고 있어야 돼요? 옛날 manual엔 10초라던데",
       ("orion-manual-S2", "reset", 3), ("orion-manual-S1", "reset", 1)),
    _q(KO, "temporal", "펌웨어 2.4로 올리면 S2 경고 온도를 낮게 바꿀 수 있나요?",
       ("orion-s2-fw24", "thresholds", 3), ("orion-manual-S2", "shutdown", 1)),
    _q(EN, "temporal", "Did the 2.4 software release for the S2 add another cooling profile?",
       ("orion-s2-fw24", "fan_mode", 3), ("orion-manual-S2", "fans", 1)),
    _q(KO, "temporal", "Relay v1 발송 API는 언제까지 쓸 수 있나요?",
       ("relay-api-migration", "sunset", 3), ("relay-api-migration", "fields", 1)),
    _q(EN, "temporal", "Where does the Pulse 3 agent read its configuration? We still have agent.yml.",
       ("pulse-config-v3", "file", 3), ("pulse-migration", "convert", 2), ("pulse-config-v2", "file", 1)),
    _q(CS, "temporal", "Pulse 2 agent는 언제까지 patch가 나와요? 그 뒤에도 metrics 전송은 되나요?",
       ("pulse-migration", "manual_steps", 3), ("pulse-migration", "convert", 1)),
    _q(EN, "temporal", "When we refund a buyer nowadays, does PayLink hand back what it charged us for the "
                       "transaction?",
       ("paylink-refund-policy", "fees", 3), ("paylink-refund-policy", "limits", 1)),
    _q(KO, "temporal", "요즘은 PayLink에서 환불해 주면 떼 갔던 수수료도 같이 돌아오나요?",
       ("paylink-refund-policy", "fees", 3), ("paylink-refund-policy", "limits", 1)),
    _q(CS, "temporal", "Keystone recovery code 세트 받은 지 3개월 넘었는데 아직 쓸 수 있어요?",
       ("ks-recovery-codes", "issue", 3), ("KS-4011", "overview", 2), ("KS-4011", "fix", 1)),
    _q(EN, "temporal", "Our 2023 PayLink contract listed Scale at 2.9% per card payment. What does Scale cost today?",
       ("paylink-plans-2024", "scale", 3), ("paylink-plans-2024", "table", 3), ("paylink-plans-2023", "scale", 1),
       ("paylink-plans-2023", "table", 1), ("paylink-plans-2024", "growth", 0), ("paylink-pricing-2024", "fees", 3)),
    _q(EN, "temporal", "Is the 2023 S2 handbook still right about when the overheating alert kicks in, now that we "
                       "run 2.4?",
       ("orion-s2-fw24", "thresholds", 3), ("orion-manual-S2", "shutdown", 2)),
    _q(EN, "temporal", "Did CloudVault change how many backups a Pro workspace may keep since our 2023 contract?",
       ("cloudvault-plans-2023", "pro", 2), ("cloudvault-plans-2024", "pro", 2),
       ("cloudvault-plans-2023", "table", 2), ("cloudvault-plans-2024", "table", 2),
       ("cloudvault-pricing-2024", "points", 3)),
    _q(CS, "temporal", "예전 Relay `/v1/send`에 apikey query parameter 붙여서 호출하는데 계속 써도 돼요?",
       ("relay-api-migration", "auth", 3), ("relay-api-migration", "sunset", 3),
       ("relay-api-migration", "fields", 1)),
    _q(EN, "temporal", "Which Pulse setting replaced flush_interval, and in what unit is it now?",
       ("pulse-config-v3", "file", 3), ("pulse-migration", "convert", 3), ("pulse-config-v2", "file", 1)),
    _q(EN, "temporal", "Does the newest Orion have anything beyond Auto, Performance and Quiet fan modes now?",
       ("orion-s2-fw24", "fan_mode", 3), ("orion-manual-S2", "fans", 2), ("orion-manual-S1", "fans", 1)),
    _q(KO, "temporal", "PayLink 2024년 요금 개편 뒤로 Growth 정산은 며칠 만에 들어오나요?",
       ("paylink-plans-2024", "growth", 3), ("paylink-plans-2024", "table", 3),
       ("paylink-pricing-2024", "payouts", 3), ("paylink-plans-2023", "growth", 1),
       ("paylink-plans-2023", "table", 1)),
    _q(KO, "temporal", "Orion S1은 언제까지 살 수 있고 부품은 언제까지 나오나요?",
       ("orion-s2-launch", "summary", 3), ("orion-warranty", "period", 1)),
    _q(EN, "temporal", "Our S1 units are getting old. How much longer will replacement parts be available, and when "
                       "did the successor ship?",
       ("orion-s2-launch", "summary", 3), ("orion-s2-launch", "thermal", 1)),
    # --- comparison ---
    _q(EN, "comparison", "CloudVault Basic vs Pro today: how many restore points does each allow?",
       ("cloudvault-plans-2024", "table", 3), ("cloudvault-plans-2024", "basic", 2),
       ("cloudvault-plans-2024", "pro", 2), ("cloudvault-plans-2023", "table", 1),
       ("cloudvault-plans-2023", "basic", 1), ("cloudvault-plans-2023", "pro", 1),
       ("cloudvault-pricing-2024", "points", 2)),
    _q(CS, "comparison", "CloudVault Pro랑 Enterprise snapshot 보관 기간 차이 얼마나 나요?",
       ("cloudvault-plans-2024", "table", 3), ("cloudvault-plans-2024", "pro", 2),
       ("cloudvault-plans-2024", "enterprise", 2), ("cloudvault-plans-2023", "pro", 1),
       ("cloudvault-plans-2023", "enterprise", 1), ("keystone-plans-2024", "table", 0),
       ("cloudvault-pricing-2024", "retention", 2)),
    _q(CS, "comparison", "PayLink Growth랑 Scale payout 주기 차이 알려 주세요",
       ("paylink-plans-2024", "table", 3), ("paylink-plans-2024", "growth", 2), ("paylink-plans-2024", "scale", 2),
       ("paylink-plans-2023", "growth", 1), ("paylink-plans-2023", "scale", 1),
       ("paylink-pricing-2024", "payouts", 2)),
    _q(KO, "comparison", "Relay 스타터에서 비즈니스로 올리면 하루에 보낼 수 있는 양이 얼마나 늘어요?",
       ("relay-plans-2024", "table", 3), ("relay-plans-2024", "starter", 2), ("relay-plans-2024", "business", 2),
       ("relay-plans-2023", "starter", 1), ("relay-plans-2023", "business", 1), ("relay-pricing-2024", "daily", 2)),
    _q(EN, "comparison", "How far back can we look at Keystone's activity history on Pro compared with Enterprise?",
       ("keystone-plans-2024", "table", 3), ("keystone-plans-2024", "pro", 2),
       ("keystone-plans-2024", "enterprise", 2), ("cloudvault-plans-2024", "pro", 0),
       ("cloudvault-plans-2023", "pro", 0)),
    _q(EN, "comparison", "How much longer does Pulse Business keep metrics than the Team plan?",
       ("pulse-plans-2024", "table", 3), ("pulse-plans-2024", "team", 2), ("pulse-plans-2024", "business", 2)),
    _q(CS, "comparison", "Orion S1이랑 S2 emergency shutdown 온도 차이가 몇 도예요?",
       ("orion-manual-S1", "shutdown", 2), ("orion-manual-S2", "shutdown", 2), ("orion-s2-fw24", "thresholds", 1),
       ("orion-s2-launch", "thermal", 1)),
    _q(EN, "comparison", "Which cooling profiles can I pick on an S1 compared with an S2?",
       ("orion-manual-S1", "fans", 2), ("orion-manual-S2", "fans", 2), ("orion-s2-fw24", "fan_mode", 1)),
    _q(KO, "comparison", "Orion S1과 S2는 파워 구성이 어떻게 달라요? 하나가 고장 나도 버티나요?",
       ("orion-manual-S1", "power", 2), ("orion-manual-S2", "power", 2), ("orion-s2-launch", "summary", 2)),
    _q(EN, "comparison", "Orion S1 versus S2: which tolerates a warmer room?",
       ("orion-manual-S1", "environment", 2), ("orion-manual-S2", "environment", 2),
       ("orion-s2-launch", "thermal", 2)),
    _q(CS, "comparison", "Pulse 2.x랑 3.x에서 log 수집 설정이 어떻게 달라요?",
       ("pulse-config-v2", "logs", 2), ("pulse-config-v3", "logs", 2), ("pulse-migration", "manual_steps", 2)),
    _q(KO, "comparison", "Relay 예전 API에서 새 API로 옮기면 보내는 파라미터 이름이 뭐가 바뀌나요?",
       ("relay-api-migration", "fields", 3), ("relay-api-messages", "params", 2), ("relay-api-migration", "auth", 1)),
    _q(KO, "comparison", "Org Admin과 Security Admin은 할 수 있는 일이 어떻게 다른가요?",
       ("ks-admin-roles", "table", 3), ("ks-admin-roles", "rules", 1), ("ks-mfa-reset", "who", 1)),
    _q(EN, "comparison", "CloudVault retention lock versus legal hold: what is the difference?",
       ("cv-retention-lock", "closing", 2), ("cv-retention-lock", "immutability", 2),
       ("cv-api-retention-lock", "lock", 2), ("cv-api-retention-lock", "legal_hold", 2)),
    _q(EN, "comparison", "Wiping an S1 versus an S2 back to factory settings: how long must the button be held on "
                         "each?",
       ("orion-manual-S1", "reset", 2), ("orion-manual-S2", "reset", 2)),
    _q(EN, "comparison", "Which PayLink tier has the lowest card fee now, and how much cheaper is it than Starter?",
       ("paylink-plans-2024", "table", 3), ("paylink-plans-2024", "starter", 2), ("paylink-plans-2024", "scale", 2),
       ("paylink-plans-2023", "table", 1), ("paylink-pricing-2024", "fees", 2)),
    _q(EN, "comparison", "Pulse Developer versus Team: how many hosts, and how long is data kept?",
       ("pulse-plans-2024", "table", 3), ("pulse-plans-2024", "developer", 2), ("pulse-plans-2024", "team", 2)),
    _q(EN, "comparison", "How is a revoked backup agent handled differently from one whose credentials simply "
                         "expired?",
       ("CV-920", "overview", 2), ("CV-920", "fix", 2), ("CV-921", "overview", 2), ("CV-921", "fix", 2)),
    _q(EN, "comparison", "Webhook endpoint too slow versus endpoint answering 410: how does PayLink treat each?",
       ("PAY-4401", "overview", 2), ("PAY-4401", "fix", 2), ("PAY-4402", "overview", 2), ("PAY-4402", "fix", 2)),
    _q(EN, "comparison", "Getting data into another region: downloading files versus restoring a whole volume?",
       ("cv-guide-file-restore", "regions", 2), ("cv-cross-region", "eligibility", 2), ("CV-816", "fix", 1),
       ("cv-cli-restore", "usage", 1)),
    _q(KO, "comparison", "주문 안내 문자랑 할인 홍보 문자는 밤에 보낼 때 규칙이 달라요?",
       ("relay-ad-policy", "night", 3), ("relay-ad-policy", "consent", 1)),
    _q(KO, "comparison", "PayLink Starter랑 Scale은 카드 수수료가 얼마나 차이 나요?",
       ("paylink-plans-2024", "table", 3), ("paylink-plans-2024", "starter", 2), ("paylink-plans-2024", "scale", 2),
       ("paylink-pricing-2024", "fees", 2), ("paylink-plans-2023", "table", 1)),
    _q(KO, "comparison", "Keystone Free에서 Pro로 바꾸면 SSO 쪽은 뭐가 달라지나요?",
       ("keystone-plans-2024", "table", 3), ("keystone-plans-2024", "free", 2), ("keystone-plans-2024", "pro", 2),
       ("ks-sso-enforcement", "scope", 1)),
    # --- multi_hop: the answer needs passages from at least two pages ---
    _q(CS, "multi_hop", "SSO enforce된 조직인데 IdP가 죽었어요. Owner가 MFA 기기까지 잃어버렸으면 어떻게 복구해요?",
       ("ks-owner-recovery", "idp_outage", 3), ("ks-owner-recovery", "request", 2), ("ks-mfa-reset", "after", 2),
       ("ks-owner-recovery", "sso", 1), ("ks-recovery-codes", "issue", 1)),
    _q(EN, "multi_hop", "Our organisation enforces SSO and the IdP is down. Can an Org Admin reset another admin's "
                        "MFA so they can get in?",
       ("ks-admin-roles", "table", 2), ("ks-mfa-reset", "who", 2), ("ks-sso-enforcement", "break_glass", 2),
       ("ks-sso-enforcement", "scope", 1)),
    _q(KO, "multi_hop", "Owner 계정 잠금을 풀려면 관리자 몇 명이 동의해야 하고, 신청한 사람도 거기 포함될 수 있나요?",
       ("ks-owner-recovery", "request", 3), ("ks-admin-roles", "rules", 2), ("ks-admin-roles", "table", 1)),
    _q(CS, "multi_hop", "KS-4011 때문에 Owner가 로그인을 못 해요. 새 recovery code는 누가 어떤 승인 받아서 발급해요?",
       ("KS-4011", "fix", 3), ("ks-owner-recovery", "request", 2), ("ks-recovery-codes", "rotate", 2),
       ("ks-recovery-codes", "issue", 2), ("KS-4010", "fix", 1)),
    _q(EN, "multi_hop", "A user hit KS-3302 and also lost their phone. Who can help, and what does identity "
                        "verification involve?",
       ("ks-mfa-reset", "who", 3), ("KS-3302", "fix", 2), ("ks-admin-roles", "table", 2),
       ("KS-3302", "overview", 1)),
    _q(EN, "multi_hop", "We are on Keystone Pro and about to force single sign-on for everyone. Can we keep an "
                        "emergency local admin login?",
       ("ks-sso-enforcement", "break_glass", 3), ("keystone-plans-2024", "pro", 2),
       ("keystone-plans-2024", "enterprise", 2), ("ks-sso-enforcement", "scope", 1)),
    _q(CS, "multi_hop", "Keystone Enterprise에서 audit log를 API로 가져오려면 token에 무슨 권한이 필요하고 누가 줘요?",
       ("ks-api-tokens", "audit", 3), ("ks-admin-roles", "table", 2), ("ks-api-tokens", "issue", 2)),
    _q(CS, "multi_hop", "Keystone Pro plan에서도 SCIM으로 user provisioning 되나요?",
       ("ks-api-scim", "endpoint", 3), ("keystone-plans-2024", "pro", 2), ("keystone-plans-2024", "table", 2)),
    _q(EN, "multi_hop", "A customer wants money back for an order captured eight months ago and the API refuses. "
                        "Who on our team can approve the alternative?",
       ("PAY-3108", "fix", 3), ("paylink-refund-policy", "window", 3), ("PAY-3108", "overview", 2)),
    _q(KO, "multi_hop", "환불 기간이 지난 결제를 수동 환급으로 돌려주면 결제 수수료도 돌려받나요?",
       ("paylink-refund-policy", "fees", 3), ("paylink-refund-policy", "window", 2), ("PAY-3108", "fix", 2)),
    _q(CS, "multi_hop", "신규 가맹점인데 Growth plan은 D+1이라면서 왜 아직 정산이 안 들어와요?",
       ("paylink-payout-hold", "new_merchants", 3), ("paylink-plans-2024", "growth", 2),
       ("paylink-plans-2024", "table", 1), ("paylink-pricing-2024", "payouts", 1)),
    _q(EN, "multi_hop", "We are a brand-new merchant on Starter. How many days after capture will our first payouts "
                        "arrive?",
       ("paylink-payout-hold", "new_merchants", 2), ("paylink-plans-2024", "starter", 2),
       ("paylink-plans-2024", "table", 2), ("paylink-plans-2023", "starter", 0),
       ("paylink-pricing-2024", "payouts", 2)),
    _q(CS, "multi_hop", "PAY-1041 timeout 나서 retry 할 때 이중 결제 안 나게 하려면 header 뭘 써야 하고 얼마나 유지돼요?",
       ("PAY-1041", "fix", 3), ("paylink-api-idempotency", "overview", 2), ("paylink-api-idempotency", "rules", 2),
       ("PAY-1042", "fix", 1)),
    _q(EN, "multi_hop", "How long do idempotency keys live, and what happens if our retry changes the amount?",
       ("paylink-api-idempotency", "rules", 3), ("PAY-2031", "overview", 2), ("PAY-2031", "fix", 2),
       ("paylink-api-idempotency", "overview", 1)),
    _q(KO, "multi_hop", "Relay 비즈니스 요금제인데 하루에 20만 건을 보내면 어떻게 되나요?",
       ("relay-plans-2024", "business", 2), ("RLY-4291", "overview", 2), ("RLY-4291", "fix", 2),
       ("relay-plans-2024", "table", 2), ("RLY-4290", "overview", 0), ("relay-pricing-2024", "daily", 1)),
    _q(KO, "multi_hop", "Relay로 밤 10시에 프로모션 메시지를 돌렸는데, 더는 안 받겠다고 한 고객 쪽에서 오류가 났어요. 이 고객은 어떻게 "
                        "처리하죠?",
       ("relay-ad-policy", "night", 2), ("relay-ad-policy", "opt_out", 2), ("RLY-6001", "fix", 3),
       ("RLY-6002", "fix", 0)),
    _q(CS, "multi_hop", "발신번호가 block 된 상태인데 해제 심사는 며칠 걸리고 그동안 어떻게 보내요?",
       ("relay-sender-policy", "block", 3), ("RLY-8051", "fix", 3), ("RLY-8050", "fix", 0)),
    _q(EN, "multi_hop", "We are on CloudVault Pro and want to restore a Seoul snapshot into a Tokyo volume. Is that "
                        "possible?",
       ("cv-cross-region", "eligibility", 3), ("cloudvault-plans-2024", "pro", 2), ("CV-816", "fix", 2),
       ("cv-cross-region", "billing", 1)),
    _q(EN, "multi_hop", "If we close our CloudVault workspace, are snapshots under retention lock deleted, and do we "
                        "keep paying for them?",
       ("cv-retention-lock", "closing", 3), ("cv-faq-billing", "deleted", 2), ("CV-702", "fix", 1)),
    _q(CS, "multi_hop", "legal hold 걸린 snapshot은 언제 지울 수 있고 누가 풀 수 있어요?",
       ("cv-api-retention-lock", "legal_hold", 3), ("cv-retention-lock", "closing", 2)),
    _q(EN, "multi_hop", "An Orion S2 logged ORN-E210. At what inlet temperature does that warning start, and when "
                        "would it shut down?",
       ("orion-manual-S2", "shutdown", 3), ("ORN-E210", "overview", 2), ("orion-manual-S1", "shutdown", 1)),
    _q(KO, "multi_hop", "S2 장비가 한 달 사이에 ORN-E211로 세 번 꺼졌어요. 바로 RMA 보낼 수 있나요?",
       ("orion-warranty", "inspection", 3), ("ORN-E211", "fix", 2), ("ORN-E211", "overview", 1)),
    _q(CS, "multi_hop", "ORN-E305 떠서 PSU 바꾸려는데 장비 전체를 RMA 보내야 해요?",
       ("orion-warranty", "cru", 3), ("ORN-E305", "fix", 2), ("orion-warranty", "period", 1)),
    _q(KO, "multi_hop", "Orion S1에서 ORN-E413이 떴어요. 전원을 안 끄고 팬만 갈아 끼워도 돼요?",
       ("orion-manual-S1", "fans", 3), ("ORN-E413", "fix", 2), ("orion-manual-S2", "fans", 1)),
    _q(EN, "multi_hop", "After upgrading to Pulse 3 our agent ignores the proxy. What is the setting now, and is "
                        "there a tool that converts the old file?",
       ("pulse-config-v3", "proxy", 3), ("pulse-migration", "manual_steps", 2), ("pulse-migration", "convert", 2),
       ("pulse-config-v2", "proxy", 1)),
    _q(KO, "multi_hop", "v1 종료 후에 `to` 필드로 보내면 어떻게 되고, v2에서는 한 번에 몇 명까지 보낼 수 있나요?",
       ("relay-api-migration", "sunset", 2), ("relay-api-migration", "fields", 2),
       ("relay-api-messages", "overview", 2), ("relay-api-messages", "params", 2)),
    _q(EN, "multi_hop", "On the free Pulse tier, can we watch ten servers and set up eight alerting conditions?",
       ("pulse-guide-alerts", "channels", 2), ("pulse-plans-2024", "developer", 2), ("pulse-plans-2024", "table", 2)),
    _q(EN, "multi_hop", "Our new Orion S2 goes into a 700 mm deep rack in a room that reaches 38 degrees. Any problem "
                        "with the rails or the temperature?",
       ("orion-guide-rack", "rails", 2), ("orion-manual-S2", "environment", 2),
       ("orion-manual-S1", "environment", 0)),
    _q(EN, "multi_hop", "Can a Finance user without two-factor login pay back an order captured more than 180 days "
                        "ago?",
       ("paylink-guide-going-live", "accounts", 2), ("PAY-3108", "fix", 2), ("paylink-refund-policy", "window", 2)),
    _q(EN, "multi_hop", "We have refunded part of a payment three times already. How much can we still return, and "
                        "how many more partial refunds are allowed?",
       ("PAY-3107", "fix", 3), ("paylink-refund-policy", "limits", 2), ("paylink-api-refunds", "overview", 1)),
    _q(EN, "multi_hop", "Before enforcing SSO on Keystone, what should we check, and which accounts can still sign "
                        "in without the IdP afterwards?",
       ("ks-guide-saml", "before_enforce", 3), ("ks-sso-enforcement", "break_glass", 2),
       ("ks-sso-enforcement", "scope", 1)),
    _q(CS, "multi_hop", "Relay quota가 오후 3시에 다 떨어졌는데 언제 다시 보낼 수 있고, 얼마나 기다릴지는 어느 header로 "
                        "알 수 있어요?",
       ("relay-api-rate-limits", "retry_after", 3), ("RLY-4291", "overview", 2),
       ("relay-api-rate-limits", "headers", 2), ("RLY-4290", "fix", 0)),
    _q(EN, "multi_hop", "An Orion S1 logged ORN-E305. Does that model even have a second power supply?",
       ("orion-manual-S1", "power", 3), ("ORN-E305", "overview", 2), ("orion-manual-S2", "power", 1)),
    _q(EN, "multi_hop", "A firmware upload on our Orion S2 failed the signature check. How long are updates locked if "
                        "we retry, and how is the update normally done on that model?",
       ("ORN-E520", "fix", 3), ("orion-manual-S2", "firmware", 2), ("orion-manual-S1", "firmware", 0)),
    _q(CS, "multi_hop", "Relay 처음 쓰는데 API로 보내기 전에 console에서 뭘 끝내야 하고, sandbox key로 보내면 실제로 "
                        "발송돼요?",
       ("relay-guide-start", "steps", 3), ("relay-guide-start", "keys", 2), ("relay-faq", "test", 2)),
    _q(EN, "multi_hop", "A payment is waiting for the customer's bank verification. If they never finish it, is "
                        "anything captured, and would a manual capture later still work?",
       ("paylink-guide-3ds", "timeout", 3), ("paylink-api-capture", "overview", 2)),
    _q(CS, "multi_hop", "CloudVault Basic plan에서 Tokyo에 있는 snapshot 파일 몇 개만 Seoul로 받아 올 수 있어요?",
       ("cv-guide-file-restore", "regions", 3), ("cv-guide-file-restore", "browse", 2),
       ("cv-cross-region", "eligibility", 2), ("cloudvault-plans-2024", "basic", 1)),
    _q(CS, "multi_hop", "Orion S1을 계속 쓸 건데 warranty 끝나고 나서도 부품은 언제까지 구할 수 있어요?",
       ("orion-warranty", "period", 2), ("orion-s2-launch", "summary", 2), ("orion-warranty", "cru", 1)),
)


# ---------------------------------------------------------------------------------------------------------------------
# Assembly
# ---------------------------------------------------------------------------------------------------------------------


class _CorpusBuilder:
    """Numbers pages (d0001) and their passages (d0001-p1) in the order they are added, and finds them by topic."""

    def __init__(self) -> None:
        self.records: list[dict] = []
        self.parent_of: dict[tuple[str, str], str] = {}  # (topic, lang) -> parent id
        self._by_topic: dict[str, list[tuple[str, str, str]]] = {}  # topic -> [(section, lang, passage id)]

    def add(self, topic: str, lang: str, title: str, sections: list[tuple[str, str]] | tuple[tuple[str, str], ...],
            *, doc_type: str, product: str, version: str | None = None) -> str:
        if (topic, lang) in self.parent_of:
            raise ValueError(f"page {topic!r} in {lang!r} added twice")
        parent = f"d{len(self.parent_of) + 1:04d}"
        self.parent_of[(topic, lang)] = parent
        for number, (section, text) in enumerate(sections, start=1):
            passage_id = f"{parent}-p{number}"
            metadata = {"parent_id": parent, "doc_type": doc_type, "lang": lang, "product": product}
            if version is not None:
                metadata["version"] = version
            self.records.append({"_id": passage_id, "title": title, "text": text, "metadata": metadata})
            self._by_topic.setdefault(topic, []).append((section, lang, passage_id))
        return parent

    def find(self, topic: str, section: str | None, langs: frozenset[str]) -> list[str]:
        """Passage ids of ``topic`` (one section or all) in the given languages; fails on an unknown topic/section."""
        entries = self._by_topic.get(topic)
        if not entries or (section is not None and all(s != section for s, _, _ in entries)):
            raise KeyError(f"no passage for topic {topic!r} section {section!r}")
        return [pid for s, lang, pid in entries if (section is None or s == section) and lang in langs]


def _build_corpus(rng: random.Random) -> tuple[_CorpusBuilder, dict[str, str]]:
    builder = _CorpusBuilder()
    twin_parents: dict[str, str] = {}
    # Error pages, twin next to twin, in every language the product publishes.
    for a, b in _twin_pairs():
        for lang in a.name:
            parents = []
            for err in (a, b):
                title = ERROR_PAGE_TITLES[(err.product, lang)].format(code=err.code, name=err.name[lang])
                example = _error_example(err, lang, rid=f"{rng.getrandbits(32):08x}")
                sections = [("overview", err.overview[lang]), ("fix", err.fix[lang]), ("example", example)]
                parents.append(builder.add(err.code, lang, title, sections, doc_type="error_code", product=err.product))
            twin_parents[parents[0]], twin_parents[parents[1]] = parents[1], parents[0]
    # Index tables and release notes that mention the same codes (never judged).
    products = list(dict.fromkeys(e.product for e in ERROR_CODES))
    for (product, lang), (title, intro) in ERROR_INDEX_PAGES.items():
        rows = [f"| {e.code} | {e.name[lang]} | {e.status} |" for e in ERROR_CODES if e.product == product]
        separator = "|---|---|---|"
        table = "\n".join([intro, "", TABLE_HEADERS[lang], separator, *rows])
        builder.add(f"{product.lower()}-error-index", lang, title, [("table", table)], doc_type="error_index",
                    product=product)
    for product in products:
        pairs = [(a, b) for a, b in _twin_pairs() if a.product == product]
        for lang in pairs[0][0].name:  # every language the product publishes in
            for number, version in enumerate(RELEASE_VERSIONS[product]):
                sections = []
                for a, b in pairs[number * 2: number * 2 + 2]:
                    template = rng.choice(RELEASE_NOTE_TEMPLATES[lang])
                    sections.append((a.code, template.format(product=product, version=version, a=a.code, b=b.code,
                                                             name_a=a.name[lang], name_b=b.name[lang])))
                title = RELEASE_NOTE_TITLES[lang].format(product=product, version=version)
                builder.add(f"{product.lower()}-release-{version}", lang, title, sections, doc_type="release_note",
                            product=product, version=version)
    for family in PLAN_FAMILIES:
        for topic, lang, edition, title, sections in _plan_pages(family):
            builder.add(topic, lang, title, sections, doc_type="plan", product=family.product, version=edition)
    for model_key, values in ORION_MODELS.items():
        for lang in (KO, EN):
            title = ORION_MANUAL_TITLES[lang].format(**values)
            builder.add(f"orion-manual-{model_key}", lang, title, _orion_manual_sections(model_key, lang),
                        doc_type="manual", product="Orion", version=model_key)
    for doc in DOCS:
        builder.add(doc.topic, doc.lang, doc.title, doc.sections, doc_type=doc.doc_type, product=doc.product,
                    version=doc.version)
    return builder, twin_parents


def _reachable_languages(language: str, intent: str) -> frozenset[str]:
    """Page languages an assessor judges for a question.

    A question that names an identifier, or mixes both languages, reaches pages in either language; otherwise only
    pages in the question's own language (and the mixed Keystone pages) were pooled and judged. This keeps the
    judgments honest about what a lexical or English-only dense first stage could ever retrieve.
    """
    if intent == "exact_id" or language == CS:
        return frozenset({EN, KO, KO_EN})
    return frozenset({language, KO_EN})


def _judge(builder: _CorpusBuilder, question: Q) -> dict[str, int]:
    langs = _reachable_languages(question.language, question.intent)
    twin_of = {code: twin for a, b in _twin_pairs() for code, twin in ((a.code, b.code), (b.code, a.code))}
    # An assessor reading an answering error page sees its near-twin right next to it, so the twin is always judged:
    # 1 for the section that answers (on topic, wrong code), 0 for its other sections. Explicit judgments win.
    grades: dict[str, int] = {}
    for topic, section, grade in question.judgments:
        if grade >= 2 and topic in twin_of and section is not None:
            for twin_section in ("overview", "fix", "example"):
                for passage_id in builder.find(twin_of[topic], twin_section, langs):
                    twin_grade = 1 if twin_section == section else 0
                    grades[passage_id] = max(twin_grade, grades.get(passage_id, twin_grade))
    explicit: dict[str, int] = {}
    for topic, section, grade in question.judgments:
        for passage_id in builder.find(topic, section, langs):
            explicit[passage_id] = max(grade, explicit.get(passage_id, grade))
    grades.update(explicit)
    if not any(grade >= 2 for grade in grades.values()):
        raise ValueError(f"question {question.text!r} has no reachable passage graded 2 or 3")
    return grades


def _assign_splits(questions: list[Q], rng: random.Random) -> list[str]:
    """Split stratified by (intent, language): a fixed share of every cell, at least one, goes to test."""
    splits = ["train"] * len(questions)
    for intent in INTENTS:
        for language in QUERY_LANGUAGES:
            cell = [i for i, q in enumerate(questions) if q.intent == intent and q.language == language]
            rng.shuffle(cell)
            for i in cell[: max(1, round(len(cell) * TEST_FRACTION))]:
                splits[i] = "test"
    return splits


def generate(seed: int = DEFAULT_SEED) -> DemoCollection:
    """Build the demo collection. The same seed gives the same collection on every run and machine."""
    rng = random.Random(seed)
    builder, twin_parents = _build_corpus(rng)
    questions = _error_code_questions(rng) + list(HAND_WRITTEN_QUESTIONS)
    splits = _assign_splits(questions, rng)
    queries: list[dict] = []
    qrels: dict[str, list[tuple[str, str, int]]] = {split: [] for split in SPLITS}
    for number, (question, split) in enumerate(zip(questions, splits), start=1):
        query_id = f"q{number:04d}"
        queries.append({"_id": query_id, "text": question.text,
                        "metadata": {"language": question.language, "intent": question.intent, "split": split}})
        grades = _judge(builder, question)
        qrels[split].extend((query_id, passage_id, grades[passage_id]) for passage_id in sorted(grades))
    return DemoCollection(corpus=builder.records, queries=queries, qrels=qrels, twin_parents=twin_parents)


# ---------------------------------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------------------------------


def _jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in records)


def _qrels_tsv(rows: list[tuple[str, str, int]]) -> str:
    return "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in rows)


def _write_atomically(path: Path, text: str) -> None:
    """Write via a temporary file in the same directory and os.replace, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp creates the file as 0600; keep the mode of the file being replaced, or use an ordinary 0644.
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o644
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except BaseException:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)
        raise


def beir_files(collection: DemoCollection) -> dict[str, str]:
    """Relative path -> exact file content of the BEIR layout (UTF-8, ``\\n`` line ends)."""
    files = {"corpus.jsonl": _jsonl(collection.corpus), "queries.jsonl": _jsonl(collection.queries)}
    for split in SPLITS:
        files[f"qrels/{split}.tsv"] = _qrels_tsv(collection.qrels[split])
    return files


def write_beir(collection: DemoCollection, out_dir: str | os.PathLike[str]) -> None:
    """Write corpus.jsonl, queries.jsonl and qrels/{train,test}.tsv under ``out_dir``, byte-identical on every run."""
    for relative, text in beir_files(collection).items():
        _write_atomically(Path(out_dir) / relative, text)


def main_demo_data(out_dir: str) -> None:
    """Entry point for ``rerankeval demo-data --out DIR``: generate with the default seed and write the BEIR files."""
    write_beir(generate(DEFAULT_SEED), out_dir)

"""RecentAnswers: an answer about a key is handed out for `ttl` seconds of its question."""

from __future__ import annotations

from okra_controllers.aws.recent import RecentAnswers
from support import FakeClock


def test_an_answer_lasts_ttl_from_its_question_not_from_its_reply() -> None:
    clock = FakeClock(100.0)
    answers: RecentAnswers[str, str] = RecentAnswers(5.0, clock)
    asked = clock()
    clock.now += 2.0  # the call took two seconds
    answers.put("arn:a", "missing", asked)
    assert answers.get("arn:a") == "missing"
    clock.now = asked + 4.999
    assert answers.get("arn:a") == "missing"
    clock.now = asked + 5.0
    assert answers.get("arn:a") is None
    assert len(answers) == 0  # an expired answer is dropped when looked at


def test_forget_drops_an_answer_and_other_keys_keep_theirs() -> None:
    clock = FakeClock(100.0)
    answers: RecentAnswers[str, bool] = RecentAnswers(5.0, clock)
    answers.put("arn:a", True, clock())
    answers.put("arn:b", True, clock())
    answers.forget("arn:a")
    answers.forget("arn:never-asked")
    assert answers.get("arn:a") is None
    assert answers.get("arn:b") is True


def test_at_most_kept_keys_then_all_forgotten_at_once() -> None:
    clock = FakeClock(100.0)
    answers: RecentAnswers[int, bool] = RecentAnswers(5.0, clock, kept=3)
    for key in range(3):
        answers.put(key, True, clock())
    answers.put(1, True, clock())  # a key already held is replaced, nothing forgotten
    assert len(answers) == 3
    answers.put(3, True, clock())
    assert len(answers) == 1
    assert answers.get(3) is True
    assert answers.get(0) is None

"""The judgement of a scheduled run's grant, without Temporal: what the grant names, the
schedule that started the run (as the server says) and the window, each refused with a
sentence that names it."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.gates._authority import Authority
from lockgate.gates._judgements import Judgement, judge_scheduled_start, schedule_of_grant
from lockgate.identity._bindings import schedule_binding
from lockgate.identity._proofs import Signer
from lockgate.testing import Identities

NOW = 1_800_000_000
INPUTS = {"order": "A-1"}


def people() -> Identities:
    return Identities({"ada": {"scopes": ["ship:send"]}})


def grant(who: Identities, **changed: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "graph": "ship:direct",
        "schedule": "ship-weekly",
        "inputs": INPUTS,
        "not_before": NOW - 60,
        "not_after": NOW + 3600,
        "version": None,
        **changed,
    }
    return who.signer("ada").sign(schedule_binding(**arguments))


def judged(
    value: object,
    who: Identities,
    *,
    started_by_schedule: bool = True,
    started_at: float = NOW,
    inputs: dict[str, Any] = INPUTS,
) -> Judgement:
    return judge_scheduled_start(
        Authority(who.directory, clock=lambda: NOW),
        value,
        graph="ship:direct",
        run="ship-weekly-2027-01-04T09:00:00Z",
        version=1,
        inputs=inputs,
        started_by_schedule=started_by_schedule,
        started_at=started_at,
    )


def test_a_run_the_granted_schedule_started_inside_the_window_runs_as_the_grants_signer() -> None:
    who = people()

    verdict = judged(grant(who), who)

    assert verdict.allowed and verdict.actor is not None
    assert (verdict.actor.actor, verdict.actor.verified) == ("ada", True)


def test_a_grant_is_not_refused_for_its_age_only_for_its_window() -> None:
    who = people()
    signed_long_ago = Signer("ada", who.key("ada"), clock=lambda: NOW - 30 * 86400)
    old = signed_long_ago.sign(
        schedule_binding("ship:direct", "ship-weekly", INPUTS, NOW - 31 * 86400, NOW + 60)
    )

    assert judged(old, who).allowed


def test_the_schedule_names_the_grant_is_for_is_read_before_it_is_judged() -> None:
    assert schedule_of_grant(grant(people())) == "ship-weekly"
    assert schedule_of_grant({"authorizes": {"schedule": 7}}) is None
    assert schedule_of_grant("not a grant") is None


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("signed by a key the Directory does not list for ada", "signature does not match"),
        ("a grant for another graph", "authorizes graph 'ship:order'"),
        ("a grant for another version", "runs version 2"),
        ("other inputs", "other inputs than the ones its schedule grant names"),
        ("a run the schedule did not start", "did not start it"),
        ("a run before the window", "outside the window"),
        ("a run after the window", "outside the window"),
    ],
)
def test_each_forgery_of_a_scheduled_run_is_refused_naming_what_is_wrong(
    case: str, words: str
) -> None:
    who = people()
    value, options = grant(who), dict[str, Any]()
    if case.startswith("signed by"):
        value = people().signer("ada").sign(value["authorizes"])
    elif case == "a grant for another graph":
        value = grant(who, graph="ship:order")
    elif case == "a grant for another version":
        value = grant(who, version=2)
    elif case == "other inputs":
        options = {"inputs": {"order": "Z-9"}}
    elif case == "a run the schedule did not start":
        options = {"started_by_schedule": False}
    elif case == "a run before the window":
        options = {"started_at": NOW - 61}
    else:
        options = {"started_at": NOW + 3601}

    verdict = judged(value, who, **options)

    assert not verdict.allowed
    assert verdict.code == "UNAUTHORIZED"
    assert words in (verdict.reason or "")

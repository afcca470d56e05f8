"""`lockgate login` and the commands that sign with a sign-in at the company's identity provider,
run as people run them: the real test provider (``tests/helpers/idp.py``), a real worker on the
dev server, and the test playing the person's browser, in which they are signed in at the
provider, by following the link the command prints."""

from __future__ import annotations

import asyncio
import json
import shlex
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from temporalio.client import Client

from lockgate import Directory, GraphClient, LockgatePlugin, WorkerSecret
from lockgate.cli._output import CommandError
from lockgate.examples.essay_review import EssayReview
from lockgate.identity._bindings import answer_binding
from lockgate.testing import WorkerFactory
from tests.helpers.command_line import Command, Ran
from tests.helpers.graphs import ALWAYS_FAILS
from tests.helpers.idp import COMMAND_LINE_CLIENT_ID, Browser, IdentityProvider
from tests.helpers.support import gate_of

pytestmark = pytest.mark.timeout(180)

OLU = "sso:corp:olu@example.com"


@pytest.fixture
def idp(tmp_path: Path) -> Iterator[IdentityProvider]:
    folder = tmp_path / "idp"
    folder.mkdir()
    provider = IdentityProvider(
        folder,
        {
            "olu": {"email": "olu@example.com", "groups": ["editors"]},
            "eve": {"email": "eve@example.com", "groups": []},
        },
    ).start()
    try:
        yield provider
    finally:
        provider.stop()


@pytest.fixture
async def command(
    tmp_path: Path, temporal_client: Client, task_queue: str, idp: IdentityProvider
) -> AsyncIterator[Command]:
    """A folder whose Directory lists ada (a key) and trusts the provider as ``corp``, whose
    group ``editors`` grants the essay desk's editor role."""
    command = Command(tmp_path, temporal_client.service_client.config.target_host, task_queue)
    made = await command("keys", "new", "ada", "--directory", ".lockgate/directory.toml")
    assert made.status == 0, made.err
    with (tmp_path / ".lockgate" / "directory.toml").open("a") as directory:
        directory.write(
            f'\n[issuers.corp]\nissuer = "{idp.issuer}"\naudience = "{COMMAND_LINE_CLIENT_ID}"\n'
            'principal_claim = "email"\n\n[issuers.corp.groups.editors]\n'
            'roles = ["editor"]\nscopes = ["essay:publish"]\n'
        )
    yield command


def plugin_of(command: Command) -> LockgatePlugin:
    return LockgatePlugin(
        graphs=[EssayReview],
        directory=Directory.load(command.cwd / ".lockgate" / "directory.toml"),
        secret=WorkerSecret.generate(),
    )


def visit(url: str) -> tuple[int, str]:
    """The browser arriving at the command's loopback redirect: its status and page."""
    try:
        with urllib.request.urlopen(url, timeout=10) as page:
            return page.status, page.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


async def signing_in(
    command: Command, browser: Browser, *arguments: str, state: str | None = None
) -> tuple[Ran, str]:
    """Runs ``lockgate ARGUMENTS`` and, when it prints its sign-in link, follows it in
    ``browser`` back to the command (with ``state`` in place of the one it came back with, if
    given); returns what the command did and the link."""
    process = await command.spawn(*arguments)
    assert process.stderr is not None
    said: list[str] = []
    while not said or not said[-1].startswith("  http"):
        line = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
        assert line, f"the command printed no sign-in link: {''.join(said)}"
        said.append(line)
    link = said[-1].strip()
    back = await asyncio.to_thread(browser.follow, link)
    if state is not None:
        split = urllib.parse.urlsplit(back)
        query = {**dict(urllib.parse.parse_qsl(split.query)), "state": state}
        back = split._replace(query=urllib.parse.urlencode(query)).geturl()
    await asyncio.to_thread(visit, back)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return Ran(process.returncode, out.decode(), "".join(said) + err.decode()), link


async def logged_in(command: Command, browser: Browser) -> Ran:
    ran, _ = await signing_in(
        command, browser, "login", "--no-browser", "--scopes", "openid email groups"
    )
    assert ran.status == 0, ran.err
    return ran


async def essay_waiting_for_an_editor(command: Command) -> str:
    started = await command(
        "start", "essay:review", "--inputs", json.dumps(ALWAYS_FAILS), "--as", "ada", "--json"
    )
    assert started.status == 0, started.err
    run: str = json.loads(started.out)["run_id"]
    return run


async def test_login_remembers_who_the_providers_token_names_and_no_token(
    command: Command, idp: IdentityProvider
) -> None:
    ran, link = await signing_in(
        command,
        idp.browser("olu"),
        "login",
        "--no-browser",
        "--scopes",
        "openid email groups",
    )

    remembered = (command.cwd / ".config" / "lockgate" / "login.toml").read_text()
    asked = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(link).query))
    assert ran.status == 0, ran.err
    assert f"Signed in at corp as {OLU}" in ran.out
    assert link.startswith(f"{idp.issuer}/auth?")
    assert asked["client_id"] == COMMAND_LINE_CLIENT_ID
    assert asked["redirect_uri"].startswith("http://127.0.0.1:")
    assert asked["code_challenge_method"] == "S256"
    assert f'principal = "{OLU}"' in remembered
    assert f'issuer_url = "{idp.issuer}"' in remembered
    assert "eyJ" not in remembered  # no token is kept: each act signs in afresh


async def test_login_opens_the_persons_browser_at_the_link_it_prints(
    command: Command, idp: IdentityProvider
) -> None:
    """The person's browser is whatever ``webbrowser`` opens: here a program (``BROWSER``) that
    writes down the URL it was opened at."""
    opened = command.cwd / "opened.txt"
    program = command.cwd / "browser.sh"
    program.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {shlex.quote(str(opened))}\n')
    program.chmod(0o755)
    command.extra_environment = {"BROWSER": str(program)}

    ran, link = await signing_in(
        command, idp.browser("olu"), "login", "--scopes", "openid email groups"
    )

    assert ran.status == 0, ran.err
    assert "in the browser that opens now" in ran.err
    assert opened.read_text() == link


async def test_decide_sso_answers_a_gate_as_the_person_signed_in_at_the_provider(
    command: Command, idp: IdentityProvider, lockgate_worker: WorkerFactory
) -> None:
    browser = idp.browser("olu")
    await logged_in(command, browser)
    async with lockgate_worker(plugin=plugin_of(command)):
        run = await essay_waiting_for_an_editor(command)
        decided, link = await signing_in(
            command, browser, "decide", run, "publish_as_is", "--sso", "--no-browser"
        )
        shown = await command("show", run, "--json")

    view = json.loads(shown.out)
    answered = [row for row in view["trail"] if row["outcome"] == "answered"]
    assert decided.status == 0, decided.err
    assert "status finished" in decided.out
    assert [(row["answer"], row["by"]["principal"]) for row in answered] == [("publish_as_is", OLU)]
    assert view["trail"][-1]["node"] == "publish"
    assert view["trail"][-1]["by"]["principal"] == OLU  # ran with what olu's groups grant
    assert "nonce=" in link


async def test_after_login_decide_without_as_signs_with_a_fresh_sign_in(
    command: Command, idp: IdentityProvider, lockgate_worker: WorkerFactory
) -> None:
    browser = idp.browser("olu")
    await logged_in(command, browser)
    async with lockgate_worker(plugin=plugin_of(command)):
        run = await essay_waiting_for_an_editor(command)
        decided, _ = await signing_in(command, browser, "decide", run, "abandon", "--no-browser")

    assert decided.status == 0, decided.err
    assert "status finished" in decided.out
    assert f"answered  editor_call (ask:editor) by {OLU} → abandon" in decided.out


async def test_a_sign_in_that_comes_back_with_another_state_is_refused_and_nothing_is_signed(
    command: Command, idp: IdentityProvider, lockgate_worker: WorkerFactory
) -> None:
    browser = idp.browser("olu")
    await logged_in(command, browser)
    async with lockgate_worker(plugin=plugin_of(command)):
        run = await essay_waiting_for_an_editor(command)
        refused, _ = await signing_in(
            command, browser, "decide", run, "publish_as_is", "--sso", "--no-browser",
            state="a-state-the-attacker-chose",
        )  # fmt: skip
        shown = await command("show", run, "--json")

    view = json.loads(shown.out)
    assert refused.status == 2
    assert "lockgate: The sign-in came back with a state this sign-in did not send" in refused.err
    assert "nothing was signed" in refused.err
    assert view["status"] == "waiting"
    assert gate_of(view).get("answers") in (None, [])
    assert [row["outcome"] for row in view["trail"] if row["outcome"] == "answered"] == []


async def test_a_token_signed_in_for_one_decision_is_refused_for_another(
    command: Command,
    idp: IdentityProvider,
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
) -> None:
    """A stale decision: the ID token of olu's signed answer to one run, put in an answer to
    another run, names the first answer's digest as its nonce; the worker refuses it."""
    browser = idp.browser("olu")
    await logged_in(command, browser)
    async with lockgate_worker(plugin=plugin_of(command)):
        first = await essay_waiting_for_an_editor(command)
        second = await essay_waiting_for_an_editor(command)
        signed, _ = await signing_in(
            command, browser, "sign", "decide", first, "publish_as_is", "--sso", "--no-browser"
        )
        proof = json.loads(signed.out)
        runs = GraphClient(temporal_client, command.task_queue)
        other = await runs.show(second)
        stale = {
            **proof,
            "authorizes": answer_binding(gate_of(other), "publish_as_is", other.get("execution")),
        }
        refused = await runs.decide_signed(second, stale)
        still = await runs.show(second)
        honest = await runs.decide_signed(first, proof)

    assert signed.status == 0, signed.err
    assert proof["principal"] == OLU and proof["id_token"].count(".") == 2
    assert refused["ok"] is False, refused
    assert "nonce is not the digest of this proof" in refused["error"]["message"]
    assert gate_of(still).get("answers") in (None, [])
    assert honest["status"] == "finished", honest


async def test_sso_before_anyone_logged_in_says_to_log_in(tmp_path: Path) -> None:
    command = Command(tmp_path, None, "unused")

    refused = await command("decide", "essay:review-1", "publish_as_is", "--sso")

    assert refused.status == 2
    assert refused.err.strip() == (
        "lockgate: --sso signs with a sign-in at your identity provider, and nobody has signed "
        "in with `lockgate login` here: run `lockgate login --issuer NAME` first."
    )


async def test_login_without_an_issuer_it_can_find_says_what_to_give(tmp_path: Path) -> None:
    command = Command(tmp_path, None, "unused")

    unnamed = await command("login")
    unknown = await command("login", "--issuer", "corp")

    assert unnamed.status == 2 and "login needs --issuer NAME" in unnamed.err
    assert unknown.status == 2
    assert "names no issuer 'corp': give --issuer-url and --client-id" in unknown.err


def test_as_and_sso_together_are_refused_as_a_usage_mistake() -> None:
    from lockgate.cli import _parser

    with pytest.raises(CommandError) as usage:  # the command prints it and exits 2
        _parser().parse_args(["decide", "run", "ok", "--as", "ed", "--sso"])

    assert "not allowed with argument" in str(usage.value)

"""The settings lockgate's servers run with, each of which changes no guarantee.

Their speed is measured in ``bench/devstack.py``; here, that each is in effect.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import Client

from lockgate import GraphClient
from lockgate.devserver import DevServer, free_port, server_args
from lockgate.testing import WorkerFactory
from tests.helpers.graphs import ALWAYS_FAILS, OpenEssay

SQLITE_HEADER = b"SQLite format 3\x00"
WAL_FORMAT = 2
"""Bytes 18 and 19 of a SQLite file: the format it is written (and read) in; 2 is WAL."""


def test_the_settings_read_the_transfer_queue_as_often_as_there_is_work() -> None:
    args = server_args(database=False)

    assert "history.transferProcessorMaxPollRPS=10000" in args
    assert "--sqlite-pragma" not in args  # in memory: there is no file to write


def test_a_database_is_written_through_its_write_ahead_log_and_synced_unless_asked_not_to() -> None:
    full = server_args(database=True)
    fast = server_args(database=True, durability="fast")

    assert "journal_mode=wal" in full and "synchronous=normal" not in full
    assert "journal_mode=wal" in fast and "synchronous=normal" in fast


def test_an_unknown_durability_is_refused_with_the_ones_there_are() -> None:
    with pytest.raises(ValueError, match="durability is one of full, fast, not 'none'"):
        server_args(database=True, durability="none")


async def test_lockgate_devs_server_keeps_its_file_in_wal_mode(tmp_path: Path) -> None:
    database = tmp_path / "temporal.db"
    async with DevServer(port=free_port(), ui=False, db_file=database):
        header = database.read_bytes()[:20]

    assert header.startswith(SQLITE_HEADER)
    assert (header[18], header[19]) == (WAL_FORMAT, WAL_FORMAT)


async def test_a_run_started_beside_its_worker_takes_its_first_task_eagerly(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    # The client starting the run is the worker's own: the server (1.32 allows eager starts by
    # default) hands the first workflow task back in the start's reply, not through the queue.
    async with lockgate_worker(graphs=[OpenEssay]):
        run = await GraphClient(temporal_client, task_queue).start(OpenEssay, ALWAYS_FAILS)
        history = await temporal_client.get_workflow_handle(run["run_id"]).fetch_history()

    started = history.events[0].workflow_execution_started_event_attributes
    assert run["status"] == "waiting", run
    assert started.eager_execution_accepted is True

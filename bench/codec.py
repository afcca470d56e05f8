"""What payload encryption costs per activity: the same lockgate tool activity, run with and
without lockgate's codec, side by side in one run.

One dev server; two workers on their own task queues, one whose client encrypts
(``LockgatePlugin(encryption=...)``) and one whose client does not. A workflow makes the same
sequential tool calls on each, ~1 KB in and ~1 KB out per call (a draft-sized payload), so
every call's input and result is encrypted and decrypted on both ends. Runs alternate, the
order flipping every round; the figure is the median of the per-round ratios. The cost of the
codec alone (a data converter's encode + decode of the same 1 KB, with and without it) is
printed too.

    python bench/codec.py [--rounds 7] [--calls 100]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import workflow

from lockgate import tool
from lockgate.activities._activity_inputs import ToolActivityInput, tool_activity_name

BENCH = "codec"
TARGET_RATIO = 1.10
_TIMEOUT = timedelta(seconds=30)
_TEXT = ("The tide turns twice a day, pulled by the moon and the sun. " * 18)[:1024]


@tool("bench:echo", "Return the text it was given.")
async def echo(text: str, round_number: int) -> dict[str, Any]:
    return {"text": text, "round": round_number}


@workflow.defn(name="bench.codec_calls")
class CodecCalls:
    @workflow.run
    async def run(self, calls: int) -> int:
        returned = 0
        for number in range(calls):
            result = await workflow.execute_activity(
                tool_activity_name("bench:echo"),
                ToolActivityInput(arguments={"text": _TEXT, "round_number": number}),
                start_to_close_timeout=_TIMEOUT,
                result_type=dict,
            )
            returned += len(result["data"]["text"])
        return returned


async def _converter_round_trip_us(converter: Any, number: int = 500) -> float:
    """Median microseconds of one encode + decode of a ~1 KB dict through ``converter``."""
    value = {"text": _TEXT, "round": 1}
    samples = []
    for _ in range(7):
        started = time.perf_counter()
        for _ in range(number):
            payloads = await converter.encode([value])
            await converter.decode(payloads, [dict])
        samples.append((time.perf_counter() - started) / number)
    return statistics.median(samples) * 1e6


async def main(rounds: int, calls: int) -> None:
    import temporalio.converter
    from temporalio.client import Client
    from temporalio.worker import Worker

    from bench._workloads import dev_server, emit, median_ratio
    from lockgate import LockgatePlugin, WorkerSecret
    from lockgate.encryption import (
        EncryptionCodec,
        PayloadKeys,
        encrypted_data_converter,
        encrypting_client,
    )

    keys = PayloadKeys.generate("bench")
    expected = calls * len(_TEXT)

    async def timed(client: Client, task_queue: str) -> float:
        started = time.perf_counter()
        returned = await client.execute_workflow(
            "bench.codec_calls",
            calls,
            id=f"bench-codec-{uuid.uuid4().hex[:12]}",
            task_queue=task_queue,
            result_type=int,
        )
        seconds = time.perf_counter() - started
        assert returned == expected, (returned, expected)
        return seconds

    async with dev_server() as environment:
        plain_client = environment.client
        encrypted_client = encrypting_client(plain_client, keys)
        plain_queue = f"bench-codec-plain-{uuid.uuid4().hex[:8]}"
        encrypted_queue = f"bench-codec-encrypted-{uuid.uuid4().hex[:8]}"
        secret = WorkerSecret.generate()
        async with (
            Worker(
                plain_client,
                task_queue=plain_queue,
                workflows=[CodecCalls],
                plugins=[LockgatePlugin(tools=[echo], secret=secret)],
            ),
            Worker(
                plain_client,
                task_queue=encrypted_queue,
                workflows=[CodecCalls],
                plugins=[LockgatePlugin(tools=[echo], secret=secret, encryption=keys)],
            ),
        ):
            # A warm-up run each: the sandbox's first import, the converters' caches.
            await timed(plain_client, plain_queue)
            await timed(encrypted_client, encrypted_queue)
            plain_seconds: list[float] = []
            encrypted_seconds: list[float] = []
            for round_number in range(rounds):
                if round_number % 2 == 0:
                    encrypted = await timed(encrypted_client, encrypted_queue)
                    plain = await timed(plain_client, plain_queue)
                else:
                    plain = await timed(plain_client, plain_queue)
                    encrypted = await timed(encrypted_client, encrypted_queue)
                plain_seconds.append(plain)
                encrypted_seconds.append(encrypted)

    plain_converter = temporalio.converter.default()
    encrypted_converter = encrypted_data_converter(EncryptionCodec(keys))
    emit(BENCH, "plain_ms_per_activity", statistics.median(plain_seconds) * 1000 / calls, "ms")
    emit(
        BENCH,
        "encrypted_ms_per_activity",
        statistics.median(encrypted_seconds) * 1000 / calls,
        "ms",
    )
    emit(
        BENCH,
        "encrypted_over_plain",
        median_ratio(encrypted_seconds, plain_seconds),
        "ratio",
        TARGET_RATIO,
        rounds=rounds,
        calls_per_run=calls,
        payload_bytes=len(_TEXT),
    )
    plain_us = await _converter_round_trip_us(plain_converter)
    encrypted_us = await _converter_round_trip_us(encrypted_converter)
    emit(BENCH, "plain_converter_round_trip_us", plain_us, "us")
    emit(BENCH, "encrypted_converter_round_trip_us", encrypted_us, "us")
    emit(BENCH, "codec_added_us_per_payload_round_trip", encrypted_us - plain_us, "us")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=100)
    options = parser.parse_args()
    # Here, not at the top: the workflow sandbox re-imports this module and may not touch sys.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    asyncio.run(main(options.rounds, options.calls))
    from bench._exit import leave

    leave()

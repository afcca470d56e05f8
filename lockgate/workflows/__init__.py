"""Temporal workflows: the graph interpreter, the durable tool call, gates in workflows of your own.

With their inputs, the state a graph run carries across continue-as-new, the seals a run opens
on its own history, the task queue's catalogue, the notify workflow, and how they schedule
activities, fail and version. Above the activities. Its modules are private:
:class:`~lockgate.LockgatePlugin` registers its workflows, and :mod:`lockgate` exports what a
workflow of your own calls (``gate``, ``call_tool``, ``Decision``).
"""

__all__: list[str] = []

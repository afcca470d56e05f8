"""Temporal activities: one per tool, the model call, the webhook delivery, the start checks.

With their inputs and names, the seal a tool activity checks and the seal on what it returns,
the handover between runs, and a refusal as a Temporal failure. Above identity, tools, gates and
graphs. Its modules are private: :class:`~lockgate.LockgatePlugin` registers its activities.
"""

__all__: list[str] = []

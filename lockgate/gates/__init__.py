"""Gates: the rules of a run's human decisions, for graph runs and workflows of your own alike.

The gate and park records, the gate engine (opening, counting, waivers, deadlines), approval
policies, the evidence an answer must carry, the judgements of starts, calls, answers, resumes
and cancels, the Authority they consult, the trail, who is told of a gate, and how much a caller
may send to a run.

Above identity and tools; it never imports temporalio, so the workflows judge with it inside the
sandbox. Its modules are private; lockgate imports each name from the module that defines it.
"""

__all__: list[str] = []

"""Graphs: the language a graph is declared in, and the compiler that checks and compiles it.

``@graph`` with its edges, routes, asks, approval policies, deadlines, sub-graphs and agent steps;
the compiler that derives everything from types and refuses everything doubtful, in one sentence
each; the compiled graph the workflows run; and the registry of graphs a worker serves.

Above identity, tools and gates; it never imports temporalio, so declaring and compiling a graph
needs no worker. Its modules are private; lockgate imports each name from the module that
defines it.
"""

__all__: list[str] = []

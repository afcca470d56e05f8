"""Where each graph's workflow class lives, so that the workflow sandbox can import it by name.

The classes are made at run time, one per graph name, by :func:`lockgate.workflows.graph_workflow`
and set on this module; the sandbox re-imports a workflow class with ``from <module> import
<name>``, which works because lockgate's modules pass through the sandbox.
"""

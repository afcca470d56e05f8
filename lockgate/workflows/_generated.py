"""The module each graph's workflow class, made at run time, says it belongs to.

temporalio accepts a class's ``@workflow.run`` only when the method and the class belong to one
importable module; :func:`lockgate.workflows._graph_workflow.graph_workflow` makes its classes
here.
"""

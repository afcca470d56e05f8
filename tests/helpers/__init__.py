"""What several test modules share: helpers, fixtures, and the graphs, tools and workflows
they declare (worker subprocesses import some of them by name)."""

"""Running lockgate: the worker and its plugin, deployment, rolling upgrades, Worker Versioning,
the dev server and its settings, the namespace, and workers and servers that crash."""

"""``memoryd serve`` as a process: start, the first hour, workers, several servers
on one store, and a stop that loses nothing acknowledged (``tests.serve_support``)."""

"""No scheduler: the control. Each start is taken from memory on its instant by C threads.

Runner: ``run_bare_threads.py``. Every instant of the spec is known in advance, nothing is
planned, claimed or recorded, and the threads keep their connections open: what is left of
a lag is the job's own INSERT and the machine (the interpreter the threads share, the
database's other work, its noise at that moment). ``compare`` shows it beside the others and
the ratio ours / this; it is never the best peer.
"""

from .base import Peer


class BareThreads(Peer):
    name = "bare-threads"
    requirements = ("psycopg[binary]>=3.1",)
    script = "run_bare_threads.py"
    control = True

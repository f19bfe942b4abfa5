"""Ending the ``abnirml`` program without the interpreter's teardown, when that is safe.

After a run that loaded torch and a model, the interpreter's own shutdown — destroying every
module and object one by one — took about 1.5 s of a 12 s cold demo run, work whose only
result is freed memory the operating system reclaims anyway. :func:`finish` skips it: it
flushes the standard streams, runs the ``atexit`` handlers (temporary folders removed,
logging flushed, worker pools stopped — whatever registered for exit still happens) and
ends the process with ``os._exit``.

It does so only where nothing can be lost: when no other non-daemon thread is alive (one
could still be writing). Everything abnirml writes is closed before a command returns. Only
the program itself calls this (``main()`` without arguments); a caller of ``main([...])``
from Python keeps its interpreter. ``ABNIRML_FAST_EXIT=off`` turns it off.

:func:`leave_on_second_interrupt` makes a second Ctrl-C end the program at once: the first
one is the usual ``KeyboardInterrupt`` (the run says it was interrupted and tidies up); a
second one while that is under way — or while the interpreter waits for something at exit —
stops the process there, with one line and no traceback. Nothing is lost by it: the score
cache is a SQLite database a kill leaves intact, and an output folder being written is
recognisably abnirml's and finished or undone by the next command (docs/reliability.md).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import types


def safe_to_skip_teardown() -> bool:
    """No non-daemon thread besides this one, and the switch is not off."""
    from abnirml.errors import ConfigError
    from abnirml.switches import env_off

    try:
        if env_off("ABNIRML_FAST_EXIT") or not hasattr(atexit, "_run_exitfuncs"):
            return False
    except ConfigError:         # a mistyped switch: the usual exit, never a traceback here
        return False
    main = threading.main_thread()
    return threading.current_thread() is main and all(
        thread.daemon or thread is main for thread in threading.enumerate())


def finish(code: int) -> None:
    """End the process with ``code`` now, skipping the teardown, if that is safe; otherwise
    return, and the caller exits the usual way."""
    if not safe_to_skip_teardown():
        return
    _flush_streams()
    atexit._run_exitfuncs()
    _flush_streams()        # what the exit handlers printed
    os._exit(code)


def leave_on_second_interrupt(code: int) -> None:
    """From now on, the first SIGINT raises ``KeyboardInterrupt`` as usual and any later one
    ends the process with ``code`` at once. Only from the main thread, and only where SIGINT
    still has Python's default handler (not where it is ignored or someone else's)."""
    import signal

    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return

    def again(signum: int, frame: object) -> None:
        with contextlib.suppress(OSError):
            os.write(2, b"abnirml: interrupted again; stopped at once\n")
        os._exit(code)

    def first(signum: int, frame: object) -> None:
        signal.signal(signal.SIGINT, again)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, first)


def _flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):   # closed, or the reader went away
            stream.flush()


def redacted_tracebacks() -> None:
    """Pass the tracebacks of unexpected errors (a bug, in the main thread or another)
    through :func:`~abnirml.errors.redact` before they are printed: an exception's message
    may quote a server's reply, and with it an API key the run registered."""
    import traceback

    from abnirml.errors import redact

    def show(kind: type[BaseException], value: BaseException,
             tb: types.TracebackType | None) -> None:
        text = "".join(traceback.format_exception(kind, value, tb))
        sys.stderr.write(redact(text))

    def show_thread(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit:
            return
        name = args.thread.name if args.thread is not None else "a thread"
        sys.stderr.write(f"Exception in thread {name}:\n")
        show(args.exc_type, args.exc_value or args.exc_type(), args.exc_traceback)

    sys.excepthook = show
    threading.excepthook = show_thread

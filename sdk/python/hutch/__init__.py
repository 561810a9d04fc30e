"""hutch: a client of the hutch sandbox service, standard library only.

    from hutch import Hutch

    hutch = Hutch()                      # $HUTCH_URL, $HUTCH_TOKEN
    with hutch.create("python") as sb:   # stopped when the block ends
        print(sb.exec("python3", "-c", "print(6*7)").stdout)
"""

from .client import DEFAULT_MAX_DOWNLOAD, DownloadTooLarge, Hutch, Sandbox, ExecResult, HutchError, Event

__all__ = ["Hutch", "Sandbox", "ExecResult", "HutchError", "Event", "DownloadTooLarge", "DEFAULT_MAX_DOWNLOAD"]
__version__ = "0.1.0"

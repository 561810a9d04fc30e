# hutch's Python kernel: runs cells sent on stdin, one JSON object a line
# ({"id", "code"}), in one namespace that outlives them, and answers each
# with a line "\x1e" NONCE " " ID "\n" on stderr, then a result line on
# stdout: "\x1e" NONCE " " JSON "\n", both after the cell's own output. The cell's stdin is /dev/null. SIGINT interrupts a
# running cell (KeyboardInterrupt) and is ignored between cells. Once SIGINT is its own, it says so on
# stderr: "\x1e" NONCE " ready\n".
import ast, base64, io, json, os, signal, sys, traceback

# Run from a file, as hutch runs it: cells import from the working
# directory (as under -c), not from the kernel's, and its frames are left
# out of their tracebacks.
KERNEL = globals().get("__file__", "<string>")
if KERNEL != "<string>" and sys.path and sys.path[0] == os.path.dirname(os.path.realpath(KERNEL)):
    sys.path[0] = ""

MARK = ("\x1e" + os.environ.pop("HUTCH_INTERP_NONCE", "") + " ").encode()
requests = sys.stdin
sys.stdin = open(os.devnull)
namespace = {"__name__": "__main__", "__builtins__": __builtins__}
running = False
count = 0

def interrupt(signum, frame):
    if running:
        raise KeyboardInterrupt
signal.signal(signal.SIGINT, interrupt)
# Ready: a SIGINT from now on is the kernel's own (before, it would end it).
os.write(2, MARK + b"ready\n")

REPRS = (("text/html", "_repr_html_"), ("text/markdown", "_repr_markdown_"), ("image/svg+xml", "_repr_svg_"),
         ("image/png", "_repr_png_"), ("image/jpeg", "_repr_jpeg_"), ("application/json", "_repr_json_"),
         ("text/latex", "_repr_latex_"))

def bundle(value):
    data = {"text/plain": repr(value)}
    for mime, name in REPRS:
        method = getattr(value, name, None)
        if not callable(method) or isinstance(value, type):
            continue
        try:
            got = method()
        except Exception:
            continue
        if isinstance(got, tuple):
            got = got[0]
        if got is None:
            continue
        if isinstance(got, bytes):
            got = base64.b64encode(got).decode()
        data[mime] = got
    return data

def figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return []
    shown = []
    for num in plt.get_fignums():
        fig = plt.figure(num)
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        shown.append({"image/png": base64.b64encode(buf.getvalue()).decode(), "text/plain": repr(fig)})
    plt.close("all")
    return shown

def failure(e):
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename not in (KERNEL, "<string>")]
    lines = ["Traceback (most recent call last):\n"] + traceback.format_list(frames) if frames else []
    lines += traceback.format_exception_only(type(e), e)
    return {"name": type(e).__name__, "value": str(e), "traceback": lines}

def reply(msg):
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    try:
        line = json.dumps(msg)
    except Exception as e:
        line = json.dumps({"id": msg["id"], "execution_count": msg["execution_count"], "status": "error",
                           "error": {"name": type(e).__name__, "value": "the result could not be encoded: " + str(e), "traceback": []}})
    # stderr's end first (after the cell's own stderr), then the result.
    os.write(2, MARK + str(msg["id"]).encode() + b"\n")
    os.write(1, MARK + line.encode() + b"\n")

while True:
    raw = requests.readline()
    if not raw:
        break
    try:
        req = json.loads(raw)
        cell_id, code = req["id"], req["code"]
        cell_env = {str(k): str(v) for k, v in (req.get("env") or {}).items()}
    except Exception:
        continue
    # The cell's own variables, then the context's back once it ends.
    saved = {k: os.environ.get(k) for k in cell_env}
    os.environ.update(cell_env)
    count += 1
    msg = {"id": cell_id, "execution_count": count}
    try:
        running = True
        tree = ast.parse(code, "<cell>", "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, "<cell>", "exec"), namespace)
        value = eval(compile(last, "<cell>", "eval"), namespace) if last is not None else None
        running = False
        msg["status"] = "ok"
        if value is not None:
            namespace["_"] = value
            msg["data"] = bundle(value)
    except BaseException as e:
        running = False
        msg["status"] = "error"
        msg["error"] = failure(e)
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    try:
        msg["display"] = figures()
    except Exception as e:
        msg.setdefault("error", failure(e))
    reply(msg)

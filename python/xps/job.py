"""Training jobs: ``xps.Job`` runs the real worker binary and follows it.

A job is the worker's config (the same keys as its YAML file, see the
repository's config/README.md) given as a dict, a YAML file's path, keyword
arguments naming its sections or dotted keys, or all of these (later ones
win)::

    job = xps.Job({"model": {"kind": "deepfm"}}, train={"epochs": 3})
    job = xps.Job("job.yaml", **{"train.batch_size": 512})
    result = job.run()            # an embedded cluster (worker -local)
    result.test_auc, result.curves

The config is checked when the Job is made, by the worker itself
(``worker -print-config``): a key it does not know, or a value of the wrong
type, raises ConfigError with the Go side's message, naming the key.

``run()`` starts ``worker -local`` (or joins a running cluster: ``etcd=``)
with ``-events -`` and reads its events (JSON lines: start, progress, end
with the summary; the Go package job's Events), never its log text: each
progress report becomes a Progress, shown as a progress line in a terminal
or a notebook and passed to ``on_progress``. Ctrl-C (KeyboardInterrupt)
stops the job cleanly: the worker is sent SIGINT, saves its model and ends;
its result is kept in ``job.result`` (``stopped`` true, and the model to
resume from), and the KeyboardInterrupt is raised again. ``run(resume=r)``
goes on from result r's saved model. ``start()`` returns a Run at once: its
``cluster`` (an xps.Cluster: status, snapshot_now, export_now), ``stop()``
and ``wait()``. ``fit(df, label=..., fields=...)`` trains on a DataFrame's
rows, served to the worker without a file (xps.rows).
"""

import collections
import json
import math
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import threading

from . import binaries

__all__ = ["ConfigError", "Job", "JobError", "Progress", "Result", "Run"]


class ConfigError(ValueError):
    """The worker refused the job's config; the message is the worker's."""


class JobError(RuntimeError):
    """The job failed. ``result`` is its Result when the worker gave one."""

    def __init__(self, message, result=None):
        super().__init__(message)
        self.result = result


def _flatten(prefix, value, out):
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str) or not k:
                raise ConfigError(f"config key {k!r} under {prefix or 'the top'}: keys are non-empty strings")
            _flatten(f"{prefix}.{k}" if prefix else k, v, out)
    else:
        out.append((prefix, value))


def _yaml_value(v):
    # JSON is YAML: the worker's -set decodes it as its config file would.
    if isinstance(v, pathlib.PurePath):
        v = str(v)
    if isinstance(v, float) and not math.isfinite(v):
        raise ConfigError(f"{v!r} is not a finite number")
    try:
        return json.dumps(v)
    except TypeError as e:
        raise ConfigError(f"a config value of type {type(v).__name__}: {e}") from None


class Progress:
    """One progress report of the worker (the Go type job.Progress): its
    figures as attributes (``epoch`` (1-based; 0: unknown), ``epochs``, ``samples``,
    ``samples_per_second``, ``loss``, ``auc``, ``running_auc``,
    ``test_auc``, ``test_logloss``, ``lag``, ``rows``, ...), an undefined
    one (an AUC of one class, a test set not evaluated yet) as NaN."""

    def __init__(self, fields):
        self._fields = {k: (math.nan if v is None else v) for k, v in fields.items()}

    def __getattr__(self, name):
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(name) from None

    def as_dict(self):
        """The report's figures as a dict."""
        return dict(self._fields)

    def line(self):
        """The report as one progress line."""
        f = self._fields
        parts = []
        if f.get("epoch"):  # 1-based, 0 when unknown
            parts.append(f"epoch {f['epoch']}/{f.get('epochs') or '?'}")
        elif not f.get("epochs"):
            parts.append("stream")
        parts.append(f"{f.get('samples', 0):,} samples")
        for key, name, fmt in (("samples_per_second", "/s", "{:,.0f}"), ("loss", "loss", "{:.4f}"),
                               ("auc", "auc", "{:.4f}"), ("test_auc", "test auc", "{:.4f}")):
            v = f.get(key, math.nan)
            if isinstance(v, (int, float)) and math.isfinite(v):
                parts.append(f"{fmt.format(v)}{name}" if name == "/s" else f"{name} {fmt.format(v)}")
        return ", ".join(parts)

    def __repr__(self):
        return f"Progress({self.line()})"


class Result:
    """A job's end: ``summary`` (the worker's -json summary as a dict, None
    when it gave none), ``curves`` (every progress report: a pandas
    DataFrame when pandas is installed, else a list of dicts), ``stopped``
    (stopped by Ctrl-C or a signal), ``error`` (why it failed or stopped,
    "" when it ended well). The summary's figures read as attributes too:
    ``result.test_auc``, ``result.samples_per_second``, ``result.model``."""

    def __init__(self, summary, progress, error="", stopped=False, status_page=""):
        self.summary = summary
        self.progress = progress
        self.error = error
        self.stopped = stopped
        self.status_page = status_page

    @property
    def curves(self):
        rows = [p.as_dict() for p in self.progress]
        try:
            import pandas
        except ImportError:
            return rows
        return pandas.DataFrame(rows)

    def __getattr__(self, name):
        s = self.__dict__.get("summary") or {}
        if name in s:
            v = s[name]
            return math.nan if v is None else v
        raise AttributeError(name)

    @property
    def model(self):
        """The saved model: a dict with its job id, store and snapshot
        (None when the job saved none)."""
        return (self.summary or {}).get("model")

    def __repr__(self):
        if self.summary is None:
            return f"Result(error={self.error!r})"
        auc = self.summary.get("test_auc")
        return (f"Result(samples={self.summary.get('samples')}, test_auc={auc}, "
                f"stopped={self.stopped}{', error=' + repr(self.error) if self.error else ''})")


class _Display:
    """Progress lines: one line rewritten in a terminal or a notebook, a
    line a report elsewhere."""

    def __init__(self, stream):
        self.stream = stream
        self.inplace = hasattr(stream, "isatty") and stream.isatty() or "ipykernel" in sys.modules
        self.width = 0

    def show(self, p):
        line = p.line()
        if self.inplace:
            pad = " " * max(0, self.width - len(line))
            self.stream.write("\r" + line + pad)
            self.width = len(line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def done(self):
        if self.inplace and self.width:
            self.stream.write("\n")
            self.stream.flush()


class Job:
    """A training job of the worker binary (see the module's doc).

    ``Job(config=None, /, **keys)``: config is a dict of the YAML file's
    keys, the path of a YAML file, or None; keys are sections
    (``train={"epochs": 3}``) or dotted keys (``**{"train.epochs": 3}``),
    applied after config in order. Raises ConfigError with the worker's
    message when the worker refuses the config.
    """

    def __init__(self, config=None, /, **keys):
        self._file = None
        self._sets = []
        if isinstance(config, (str, os.PathLike)):
            p = pathlib.Path(config)
            if not p.is_file():
                raise ConfigError(f"config file {p}: no such file")
            self._file = str(p.resolve())
        elif isinstance(config, dict):
            _flatten("", config, self._sets)
        elif config is not None:
            raise ConfigError(f"config is a {type(config).__name__}: want a dict, a YAML file's path or None")
        for k, v in keys.items():
            _flatten(k, v, self._sets)
        self.result = None
        self.config_yaml = self._check()

    def args(self):
        """The worker's arguments that give it this job's config."""
        out = ["-config", self._file] if self._file else []
        for path, value in self._sets:
            out += ["-set", f"{path}={_yaml_value(value)}"]
        return out

    def _check(self):
        res = subprocess.run([binaries.find("worker"), *self.args(), "-print-config"],
                             capture_output=True, text=True, timeout=120)
        if res.returncode != 0:
            msg = res.stderr.strip()
            if msg.startswith("worker: "):
                msg = msg[len("worker: "):]
            raise ConfigError(msg)
        return res.stdout

    def run(self, *, etcd=None, worker_index=0, resume=None, progress=True, on_progress=None,
            cwd=None, extra_args=()):
        """Runs the job to its end and returns its Result: ``start(...)``,
        then ``wait()`` on it (see both).

        Raises JobError when the job fails, and KeyboardInterrupt again after
        a Ctrl-C has stopped it (its Result in ``self.result``)."""
        return self.start(etcd=etcd, worker_index=worker_index, resume=resume, progress=progress,
                          on_progress=on_progress, cwd=cwd, extra_args=extra_args).wait()

    def fit(self, data, *, label, fields=None, test=None, **run_args):
        """Trains on a pandas DataFrame, a dict of numpy arrays, or an
        iterable of rows (dicts of column -> value, gathered into columns
        in memory first), and returns the Result, as run() does (its
        keyword arguments too).

        The rows are served to the worker over a Unix socket (xps.rows: no
        file is written, numeric columns are sent from the DataFrame's own
        arrays), as train.columns maps them: ``label`` names the label
        column (numbers or booleans, > 0 a click); ``fields`` lists the
        feature columns, each a name or a dict of train.columns.fields' keys
        (``{"column": "price", "kind": "bucket", "boundaries": [10, 100]}``),
        field i the i-th; None means every other column. Integer, boolean
        and string columns are tokens (hashed as libFFM's tokens are), float
        columns values. ``test``: a DataFrame of the same columns the job
        evaluates on (else job.test's files, if any). A worker of several
        (``etcd=``, one process each) reads its part of the rows. The data
        must not change while the job runs: epochs and resumes read it
        again."""
        from . import rows
        try:
            data, test = rows.as_table(data), None if test is None else rows.as_table(test)
            tables = {"train": data} if test is None else {"train": data, "test": test}
            names = [label] + [f if isinstance(f, str) else f.get("column") for f in
                               (fields if fields is not None else [c for c in data.keys() if c != label])]
            service = rows.RowService(tables, names)
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(str(e.args[0]) if e.args else str(e)) from None
        with service:
            fitted = Job.__new__(Job)
            fitted._file, fitted._sets, fitted.result = self._file, list(self._sets), None
            _flatten("train.columns", rows.columns_map(label, names[1:] if fields is None else fields), fitted._sets)
            fitted.config_yaml = fitted._check()
            extra = ["-rows", service.path] + (["-rows-test"] if test is not None else [])
            run_args["extra_args"] = [*run_args.get("extra_args", ()), *extra]
            try:
                return fitted.run(**run_args)
            finally:
                self.result = fitted.result

    def start(self, *, etcd=None, worker_index=0, resume=None, progress=True, on_progress=None,
              cwd=None, extra_args=()):
        """Starts the job and returns its Run at once.

        etcd: endpoints ("host:port,...") of a running cluster to join as
        worker ``worker_index``; None runs an embedded cluster (``worker
        -local``). resume: a Result whose saved model the job goes on from.
        progress: show progress lines (True: on stderr; or a stream).
        on_progress: called with each Progress, from the thread that reads
        the events. cwd: the worker's directory (-local keeps its models
        under xps-models there). extra_args: more worker flags."""
        args = [binaries.find("worker"), *self.args()]
        args += ["-local"] if etcd is None else ["-etcd", etcd, "-worker-index", str(worker_index)]
        if resume is not None:
            m = resume.model
            if not m:
                raise JobError("the result to resume saved no model")
            args += ["-set", f"job.id={m['job']}", "-set", f"snapshot.store={m['store']}"]
        args += ["-events", "-", "-quiet", *extra_args]
        stream = sys.stderr if progress is True else progress
        return Run(self, args, cwd, _Display(stream) if stream else None, on_progress)


class Run:
    """A job running (Job.start): ``cluster`` (an xps.Cluster of its
    cluster, once started: ``started()`` waits for it), ``progress`` (the
    reports so far), ``stop()`` (as Ctrl-C: the worker saves its model and
    ends), ``wait()`` (its Result)."""

    def __init__(self, job, args, cwd, display, on_progress):
        self._job = job
        self._display = display
        self._on_progress = on_progress
        self.progress = []
        self.cluster = None
        self._end = None
        self._started = threading.Event()
        self._stopped = False
        self._callback_error = None
        self._proc = subprocess.Popen(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      start_new_session=True)  # Ctrl-C reaches it from us only
        self._tail = collections.deque(maxlen=200)
        self._drain = threading.Thread(target=lambda: self._tail.extend(self._proc.stderr), daemon=True)
        self._drain.start()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        try:
            for line in self._proc.stdout:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue  # not an event
                kind = ev.get("event")
                if kind == "start":
                    from .cluster import Cluster
                    self.cluster = Cluster(etcd=ev.get("etcd") or None, http=ev.get("status_page") or None,
                                           name=ev.get("cluster") or "default")
                    self._started.set()
                elif kind == "progress":
                    p = Progress(ev["progress"])
                    self.progress.append(p)
                    if self._display:
                        self._display.show(p)
                    if self._on_progress and self._callback_error is None:
                        try:
                            self._on_progress(p)
                        except BaseException as e:  # noqa: BLE001: raised again by wait
                            self._callback_error = e
                            self.stop()
                elif kind == "end":
                    self._end = ev
        finally:
            self._started.set()

    def started(self, timeout=None):
        """Waits until the job has started (its cluster is up) and returns
        its Cluster (None if the job ended before it started)."""
        self._started.wait(timeout)
        return self.cluster

    def stop(self):
        """Stops the job as Ctrl-C does: the worker saves its model and
        ends. wait() then returns its Result, ``stopped`` true."""
        self._stopped = True
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)

    def wait(self):
        """Waits for the job's end and returns its Result (also in the
        Job's ``result``). A KeyboardInterrupt meanwhile stops the job
        (stop()), waits for it to end and is raised again; a second one
        kills the worker. Raises JobError when the job failed."""
        interrupted = False
        try:
            while self._reader.is_alive():
                try:
                    self._reader.join(0.2)
                except KeyboardInterrupt:
                    if interrupted:  # a second Ctrl-C: stop waiting
                        self._proc.kill()
                        raise
                    interrupted = True
                    self.stop()
            self._proc.wait()
        finally:
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait()
            if self._display:
                self._display.done()
        self._drain.join(timeout=5)
        err = self._callback_error
        if isinstance(err, KeyboardInterrupt):
            interrupted = True
        r = self._result(interrupted)
        if err is not None:
            raise err
        return r

    def _result(self, interrupted):
        code, end, tail = self._proc.returncode, self._end, self._tail
        if end is None:
            raise JobError(f"the worker exited with status {code} without ending the job:\n" + "".join(tail).strip())
        error = end.get("error", "")
        r = Result(end.get("result"), self.progress, error=error, stopped=self._stopped,
                   status_page=self.cluster.http if self.cluster else "")
        self._job.result = r
        if interrupted:
            raise KeyboardInterrupt(f"the job was stopped: {error}" if error else "the job was stopped")
        if self._callback_error is not None:
            return r
        if (code != 0 or error) and not self._stopped:
            raise JobError(error or f"the worker exited with status {code}:\n" + "".join(tail).strip(), r)
        return r

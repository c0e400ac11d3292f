"""traces/sweep/plot_sweep.py: a class per defect the script once had (each test failed before its fix), its other
features, and the row selection, facets, reduction notes and labels. Run from the repository root:
/usr/bin/python3 -m unittest -v tests/python/test_plot_sweep.py"""
import contextlib
import importlib.util
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "traces", "sweep", "plot_sweep.py")

spec = importlib.util.spec_from_file_location("plot_sweep", SCRIPT)
plot_sweep = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plot_sweep)

PRESETS = ["zero3", "dp", "zero1"]  # deliberately not alphabetical: the sweep's order is the legend's
DPS = [1, 2, 4, 8, 16]


def memory_of(preset, dp):
    return {"dp": 120e9, "zero1": 30e9 + 90e9 / dp, "zero3": 120e9 / dp}[preset]


def rows(sweep="9f2c4e1a0b3d5e67", new=True, device_memory=80e9, drop_comm_for=None):
    """The rows of a preset x dp sweep, in the new format (sweep, version, points, device_memory_bytes) or the old."""
    out = []
    for k, (preset, dp) in enumerate((p, d) for p in PRESETS for d in DPS):
        row = {"index": k}
        if new:
            row.update({"sweep": sweep, "version": "0.19.0", "points": len(PRESETS) * len(DPS)})
        row["point"] = {"strategy.preset": preset, "strategy.dp": dp}
        row["status"] = "ok"
        row["memory.total_bytes"] = memory_of(preset, dp)
        if preset != drop_comm_for:
            row["communication.bytes_per_step"] = 1e9 * dp
        if new and device_memory is not None:
            row["device_memory_bytes"] = device_memory
        out.append(row)
    return out


class Files:
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="plot-sweep-test-")

    def tearDown(self):
        shutil.rmtree(self.tmp)
        plot_sweep.plt.close("all")

    def write(self, name, lines):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            for row in lines:
                f.write(json.dumps(row) + "\n")
        return path

    def assert_labels(self, expected):
        """plot_sweep.label names every field of `expected` as it says."""
        for field, name in expected.items():
            with self.subTest(field=field):
                self.assertEqual(plot_sweep.label(field), name)

    def load(self, *paths, allow_mixed=False):
        warnings = []
        frame, axes = plot_sweep.load_frame(list(paths), allow_mixed=allow_mixed, warn=warnings.append)
        return frame, axes, warnings

    def figure(self, path, *options, warnings=None):
        """The figure the command line would draw (after --where, the defaults and --status); the warnings it gives
        are appended to `warnings` when given."""
        args = plot_sweep.parse_args([path] + list(options))
        frame, axes, _ = self.load(path)
        frame = plot_sweep.apply_where(frame, axes, args.wheres)
        plot_sweep.defaults(frame, axes, args)
        warn = warnings.append if warnings is not None else (lambda m: None)
        return plot_sweep.build_figure(plot_sweep.select_status(frame, args.status), args, warn=warn)


class DuplicatesAndMixing(Files, unittest.TestCase):
    """Defect 1: a file given twice was counted twice (mean, counts); rows of other sweeps were mixed in silently."""

    def test_a_file_given_twice_draws_what_it_draws_once(self):
        path = self.write("r.jsonl", rows())
        once, _, _ = self.load(path)
        twice, _, warnings = self.load(path, os.path.join(self.tmp, ".", "r.jsonl"))
        self.assertEqual(len(twice), len(once))
        for agg in ("mean", "none"):
            self.assertEqual(plot_sweep.series(twice, "strategy.dp", "memory.total_bytes", "strategy.preset", agg),
                             plot_sweep.series(once, "strategy.dp", "memory.total_bytes", "strategy.preset", agg))
        self.assertTrue(any("read once" in w for w in warnings), warnings)

    def test_rows_read_twice_through_a_shard_and_the_merged_file_count_once(self):
        merged = self.write("merged.jsonl", rows())
        shard = self.write("shard1.jsonl", [dict(r, shard="1/4") for r in rows() if r["index"] % 4 == 1])
        both, _, warnings = self.load(merged, shard)
        self.assertEqual(len(both), len(PRESETS) * len(DPS))
        self.assertIn("dropped 4 duplicate rows (same sweep and index)", warnings[-1])
        self.assertEqual(plot_sweep.series(both, "strategy.dp", "memory.total_bytes", "strategy.preset", "none"),
                         plot_sweep.series(self.load(merged)[0], "strategy.dp", "memory.total_bytes",
                                           "strategy.preset", "none"))

    def test_shards_of_one_sweep_combine(self):
        shards = [self.write(f"s{i}.jsonl", [dict(r, shard=f"{i}/2") for r in rows() if r["index"] % 2 == i])
                  for i in range(2)]
        frame, _, warnings = self.load(*shards)
        self.assertEqual(list(frame["index"]), list(range(len(PRESETS) * len(DPS))))
        self.assertEqual(warnings, [])

    def test_rows_of_different_sweeps_are_refused_naming_both_files(self):
        a = self.write("a.jsonl", rows(sweep="aaaaaaaaaaaaaaaa"))
        b = self.write("b.jsonl", rows(sweep="bbbbbbbbbbbbbbbb"))
        with self.assertRaises(plot_sweep.ResultsError) as caught:
            self.load(a, b)
        message = str(caught.exception)
        for part in (a, b, "different sweeps", "--allow-mixed"):
            self.assertIn(part, message)
        frame, _, _ = self.load(a, b, allow_mixed=True)
        self.assertEqual(len(frame), 2 * len(PRESETS) * len(DPS))

    def test_old_rows_with_other_points_at_one_index_are_refused(self):
        a = self.write("a.jsonl", rows(new=False))
        other = [dict(r, point={"strategy.preset": r["point"]["strategy.preset"], "strategy.dp": 3})
                 for r in rows(new=False)]
        b = self.write("b.jsonl", other)
        with self.assertRaisesRegex(plot_sweep.ResultsError, "different points at index 0"):
            self.load(a, b)

    def test_rows_with_and_without_a_sweep_hash_are_refused(self):
        new = self.write("new.jsonl", rows())
        old = self.write("old.jsonl", rows(new=False))
        with self.assertRaisesRegex(plot_sweep.ResultsError, "rows with a sweep hash .* and .* rows without one"):
            self.load(new, old)
        frame, _, _ = self.load(new, old, allow_mixed=True)
        self.assertEqual(len(frame), 2 * len(PRESETS) * len(DPS))

    def test_a_file_that_is_not_utf8_is_named(self):
        path = os.path.join(self.tmp, "r.jsonl.gz")
        with open(path, "wb") as f:
            f.write(b"\x1f\x8b\x08\x00\xff\xfe")
        with self.assertRaisesRegex(plot_sweep.ResultsError, "r.jsonl.gz: not a UTF-8 JSONL file"):
            self.load(path)

    def test_the_command_line_refuses_mixed_sweeps(self):
        a = self.write("a.jsonl", rows(sweep="aaaaaaaaaaaaaaaa"))
        b = self.write("b.jsonl", rows(sweep="bbbbbbbbbbbbbbbb"))
        with self.assertRaises(SystemExit) as caught, contextlib.redirect_stderr(io.StringIO()):
            plot_sweep.main([a, b, "--out", os.path.join(self.tmp, "x.png")])
        self.assertIn("different sweeps", str(caught.exception.code))


class Colours(Files, unittest.TestCase):
    """Defect 2: colours were assigned per panel, so a hue value missing from one panel shifted the others."""

    def series_colours(self, ax):
        return {line.get_label(): line.get_color() for line in ax.get_lines() if line.get_gid() == "series"}

    def test_a_hue_value_has_one_colour_in_every_panel(self):
        # dp has no communication figure: the old script gave zero1 dp's colour in the second panel.
        path = self.write("r.jsonl", rows(drop_comm_for="dp"))
        fig = self.figure(path, "--x", "strategy.dp", "--hue", "strategy.preset", "--y", "memory.total_bytes",
                          "--y", "communication.bytes_per_step")
        panels = [ax for ax in fig.axes if ax.get_lines()]
        self.assertEqual(len(panels), 2)
        first, second = (self.series_colours(ax) for ax in panels)
        self.assertEqual(set(first), set(PRESETS))
        self.assertEqual(set(second), {"zero3", "zero1"})
        for preset, colour in second.items():
            self.assertEqual(colour, first[preset], preset)
        legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
        self.assertEqual(len(legends), 1, "one legend for the figure")
        entries = {h.get_label(): h.get_color() for h in legends[0].legend_handles} if hasattr(
            legends[0], "legend_handles") else {h.get_label(): h.get_color() for h in legends[0].legendHandles}
        self.assertEqual({k: entries[k] for k in PRESETS}, first)

    def test_colours_and_markers_follow_the_order_of_the_values(self):
        mapping = plot_sweep.colour_map(["zero3", "dp", "zero1"])
        self.assertEqual(list(mapping), ["zero3", "dp", "zero1"])
        self.assertEqual(mapping["zero3"], (plot_sweep.PALETTE[0], plot_sweep.MARKERS[0]))
        self.assertEqual(mapping["zero1"], (plot_sweep.PALETTE[2], plot_sweep.MARKERS[2]))
        frame, _, _ = self.load(self.write("r.jsonl", rows()))
        self.assertEqual(plot_sweep.ordered_values(frame, "strategy.preset"), PRESETS)
        self.assertEqual(plot_sweep.ordered_values(frame.iloc[::-1], "strategy.dp"), DPS)


class Labels(Files, unittest.TestCase):
    """Defect 3: axes showed raw dotted paths."""

    def test_known_fields_have_names_and_units(self):
        self.assert_labels({
            "strategy.dp": "data-parallel degree",
            "strategy.tp": "tensor-parallel degree",
            "strategy.pp": "pipeline stages",
            "memory.total_bytes": "memory per GPU [GB]",
            "communication.bytes_per_step": "bytes sent per GPU per step [GB]",
            "simulation.step_time_s": "step time [s]",
            "simulation.mfu": "MFU [%]",
            "simulation.tokens_per_s": "throughput [tokens/s]",
            "strategy.placement.optimizer": "optimizer placement",
        })

    def test_unknown_fields_read_as_their_last_component(self):
        self.assertEqual(plot_sweep.label("memory.per_stage.0.activations_bytes"), "activations [GB]")
        self.assertEqual(plot_sweep.label("pipeline.idle_fraction_mean"), "idle fraction mean")
        self.assertEqual(plot_sweep.label("strategy.dp", {"strategy.dp": "GPUs"}), "GPUs")

    def test_the_figure_uses_the_names_and_the_label_option(self):
        path = self.write("r.jsonl", rows())
        fig = self.figure(path, "--y", "memory.total_bytes", "--label", "strategy.preset=ZeRO stage")
        ax = [ax for ax in fig.axes if ax.get_lines()][0]
        self.assertEqual(ax.get_xlabel(), "data-parallel degree")
        self.assertEqual(ax.get_ylabel(), "memory per GPU [GB]")
        legend = [a.get_legend() for a in fig.axes if a.get_legend() is not None][0]
        self.assertEqual(legend.get_title().get_text(), "ZeRO stage")


class MemoryLimit(Files, unittest.TestCase):
    """Defect 4: the GPU's memory was not shown on memory panels."""

    def limit_lines(self, fig):
        return {ax.get_ylabel(): [line.get_ydata()[0] for line in ax.get_lines() if line.get_gid() == "device_memory"]
                for ax in fig.axes if ax.get_lines()}

    def test_a_dashed_line_at_the_rows_device_memory_on_memory_panels_only(self):
        path = self.write("r.jsonl", rows(device_memory=80e9))
        fig = self.figure(path, "--y", "memory.total_bytes", "--y", "communication.bytes_per_step")
        lines = self.limit_lines(fig)
        self.assertEqual(lines["memory per GPU [GB]"], [80.0])
        self.assertEqual(lines["bytes sent per GPU per step [GB]"], [])
        dashed = [line for ax in fig.axes for line in ax.get_lines() if line.get_gid() == "device_memory"]
        self.assertEqual(dashed[0].get_linestyle(), "--")
        legend = [a.get_legend() for a in fig.axes if a.get_legend() is not None][0]
        self.assertIn("GPU memory (80 GB)", [t.get_text() for t in legend.get_texts()])

    def test_device_memory_option_overrides_and_names_gib(self):
        path = self.write("r.jsonl", rows(new=False))
        fig = self.figure(path, "--y", "memory.total_bytes", "--device-memory", "40GiB")
        self.assertAlmostEqual(self.limit_lines(fig)["memory per GPU [GB]"][0], 40 * 2**30 / 1e9)
        legend = [a.get_legend() for a in fig.axes if a.get_legend() is not None][0]
        self.assertIn("GPU memory (40 GiB)", [t.get_text() for t in legend.get_texts()])

    def test_the_sweeps_device_memory_key_draws_the_line(self):
        # A sweep run with --device-memory carries "device_memory" in every row (and the figure
        # device_memory_bytes only when it is among the figures).
        marked = [dict(r, device_memory=32e9) for r in rows(device_memory=None)]
        frame, _, _ = self.load(self.write("r.jsonl", marked))
        self.assertEqual(plot_sweep.memory_limit(frame), 32e9)
        self.assertNotIn("device_memory", frame.attrs["figures"])

    def test_no_line_when_the_rows_disagree_or_do_not_say(self):
        mixed = rows()
        mixed[0]["device_memory_bytes"] = 40e9
        frame, _, _ = self.load(self.write("r.jsonl", mixed))
        self.assertIsNone(plot_sweep.memory_limit(frame))
        frame, _, _ = self.load(self.write("old.jsonl", rows(new=False)))
        self.assertIsNone(plot_sweep.memory_limit(frame))
        self.assertEqual(plot_sweep.parse_size("80GB"), 80e9)
        self.assertTrue(plot_sweep.is_memory_figure("memory.model_states_bytes"))
        self.assertFalse(plot_sweep.is_memory_figure("memory.host_bytes"))
        self.assertFalse(plot_sweep.is_memory_figure("communication.bytes_per_step"))


class LogAxes(Files, unittest.TestCase):
    """Defect 5: x was linear for powers of two spanning less than 100x, and could not be overridden."""

    def scales(self, *options):
        fig = self.figure(self.write("r.jsonl", rows()), "--y", "memory.total_bytes", *options)
        ax = [ax for ax in fig.axes if ax.get_lines()][0]
        return ax.get_xscale(), getattr(ax.xaxis.get_transform(), "base", None), ax.get_yscale()

    def test_powers_of_two_get_a_base_2_x_axis(self):
        # dp 1..16 spans only 16x (the old rule wanted 100x); memory 7.5..120 GB spans 16x too: linear y.
        self.assertEqual(self.scales(), ("log", 2, "linear"))
        self.assertEqual(self.scales("--logy"), ("log", 2, "log"))

    def test_overrides(self):
        self.assertEqual(self.scales("--linear"), ("linear", None, "linear"))
        self.assertEqual(self.scales("--linear", "--logy"), ("linear", None, "log"))
        frame = plot_sweep.pd.DataFrame({"x": [1, 3, 5]})
        self.assertIsNone(plot_sweep.x_scale(frame, "x"))
        self.assertEqual(plot_sweep.x_scale(frame, "x", logx=True), 10)
        self.assertEqual(plot_sweep.x_scale(plot_sweep.pd.DataFrame({"x": [1, 50, 300]}), "x"), 10)


def png_size(path):
    with open(path, "rb") as f:
        header = f.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


def pdf_size(path):
    with open(path, "rb") as f:
        data = f.read().decode("latin-1")
    import re
    box = re.search(r"/MediaBox\s*\[\s*0\s+0\s+([0-9.]+)\s+([0-9.]+)\s*\]", data)
    return float(box.group(1)), float(box.group(2))


class Output(Files, unittest.TestCase):
    """Defect 6: outputs were screen-sized at 150 dpi."""

    def run_main(self, *argv):
        with contextlib.redirect_stderr(io.StringIO()):
            plot_sweep.main(list(argv))

    def test_pdf_png_svg_at_the_requested_size(self):
        path = self.write("r.jsonl", rows())
        png, pdf, svg = (os.path.join(self.tmp, "fig." + e) for e in ("png", "pdf", "svg"))
        self.run_main(path, "--y", "memory.total_bytes", "--y", "communication.bytes_per_step",
                      "--size", "7x2.5", "--out", png, "--out", pdf, "--out", svg)
        self.assertEqual(png_size(png), (7 * 300, int(2.5 * 300)))
        self.assertEqual(pdf_size(pdf), (7 * 72, 2.5 * 72))
        with open(svg, encoding="utf-8") as f:
            self.assertIn('width="504pt" height="180pt"', f.read(2000))

    def test_column_width_and_fonts(self):
        path = self.write("r.jsonl", rows())
        png = os.path.join(self.tmp, "col.png")
        self.run_main(path, "--size", "column", "--out", png)
        self.assertEqual(png_size(png)[0], int(3.5 * 300))
        self.assertEqual(plot_sweep.figure_layout("page", 2)[:4], (7.0, 2.6, 2, 8))
        self.assertEqual(plot_sweep.figure_layout("column", 2)[2], 1, "column figures stack their panels")

    def test_unknown_extension_is_refused(self):
        with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
            plot_sweep.parse_args(["r.jsonl", "--out", "fig.jpeg"])


class Interpreter(Files, unittest.TestCase):
    """Defect 7: under pyenv's python3 (no Debian packages) the script failed with an ImportError."""

    def test_the_re_exec_decision(self):
        exists = lambda path: True  # noqa: E731
        target = plot_sweep.reexec_target(False, "/root/.pyenv/versions/3.11.7/bin/python3", "/usr/bin/python3",
                                          exists, environ={})
        self.assertEqual(target, "/usr/bin/python3")
        self.assertIsNone(plot_sweep.reexec_target(True, "/opt/python3", "/usr/bin/python3", exists, environ={}))
        self.assertIsNone(plot_sweep.reexec_target(False, "/usr/bin/python3", "/usr/bin/python3", exists, environ={}))
        self.assertIsNone(plot_sweep.reexec_target(False, "/opt/python3", "/usr/bin/python3", lambda p: False,
                                                   environ={}))
        self.assertIsNone(plot_sweep.reexec_target(False, "/opt/python3", "/usr/bin/python3", exists,
                                                   environ={plot_sweep.REEXEC_GUARD: "1"}))

    def test_without_the_libraries_it_says_what_to_install(self):
        # -S hides Debian's dist-packages from Debian's own python: the script cannot re-run under itself.
        done = subprocess.run([sys.executable, "-S", SCRIPT, "r.jsonl"], capture_output=True, text=True,
                              env=dict(os.environ, PYTHONPATH=""))
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("apt-get install python3-matplotlib python3-pandas", done.stderr)
        self.assertIn("/usr/bin/python3", done.stderr)

    def test_another_python_without_the_libraries_re_runs_it_under_debians(self):
        others = [p for p in (shutil.which("python3"), shutil.which("python3", path="/root/.pyenv/shims"))
                  if p and os.path.realpath(p) != os.path.realpath("/usr/bin/python3")]
        if not others or subprocess.run([others[0], "-c", "import matplotlib, pandas"],
                                         capture_output=True).returncode == 0:
            self.skipTest("no other python3 without matplotlib or pandas here")
        png = os.path.join(self.tmp, "r.png")
        env = {k: v for k, v in os.environ.items() if k != plot_sweep.REEXEC_GUARD}
        done = subprocess.run([others[0], SCRIPT, self.write("r.jsonl", rows()), "--out", png],
                              capture_output=True, text=True, env=env)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(png_size(png), (int(5.5 * 300), 4 * 300))


class KeptFeatures(Files, unittest.TestCase):
    def test_defaults_and_agg(self):
        path = self.write("r.jsonl", rows())
        args = plot_sweep.parse_args([path])
        frame, axes, _ = self.load(path)
        plot_sweep.defaults(frame, axes, args)
        self.assertEqual((args.x, args.y, args.hue), ("strategy.dp", ["memory.total_bytes"], "strategy.preset"))
        two = [dict(r, index=r["index"] + 100, point=dict(r["point"], **{"training.micro_batch": 2}),
                    **{"memory.total_bytes": r["memory.total_bytes"] / 2}) for r in rows()]
        frame, _, _ = self.load(self.write("mb.jsonl", rows() + two))
        lines = plot_sweep.series(frame, "strategy.dp", "memory.total_bytes", "strategy.preset", "min")
        self.assertEqual(lines["dp"], (DPS, [60e9] * len(DPS)))
        lines = plot_sweep.series(frame, "strategy.dp", "memory.total_bytes", "strategy.preset", "max")
        self.assertEqual(lines["dp"][1], [120e9] * len(DPS))

    def test_status_filtered_rows_are_drawn_only_when_asked(self):
        marked = rows()
        marked[0]["status"] = "invalid"
        marked[1]["status"] = "filtered"
        marked[1]["reason"] = "filters: strategy.dp=2 is not in [1]"
        frame, _, _ = self.load(self.write("r.jsonl", marked))
        self.assertEqual(len(plot_sweep.select_status(frame, "ok")), len(marked) - 2)
        self.assertEqual(len(plot_sweep.select_status(frame, "all")), len(marked) - 1)
        self.assertEqual(list(plot_sweep.select_status(frame, "filtered")["index"]), [1])

    def test_rows_without_the_figure_are_refused_not_drawn_empty(self):
        marked = [dict(r, status="filtered", reason="filters.strategy.dp") for r in rows()]
        for r in marked[1:]:  # the column exists (row 0 is ok and has it), the filtered rows lack it
            del r["memory.total_bytes"], r["communication.bytes_per_step"]
        marked[0]["status"] = "ok"
        path = self.write("f.jsonl", marked)
        with self.assertRaises(SystemExit) as caught, contextlib.redirect_stderr(io.StringIO()):
            plot_sweep.main([path, "--status", "filtered", "--y", "memory.total_bytes",
                             "--out", os.path.join(self.tmp, "f.png")])
        self.assertIn("no row has memory.total_bytes to draw", str(caught.exception.code))

    def test_the_legend_lists_only_values_with_something_to_draw(self):
        marked = rows()
        for r in marked:
            if r["point"]["strategy.preset"] == "zero1":
                r["status"] = "invalid"
                del r["memory.total_bytes"], r["communication.bytes_per_step"]
        fig = self.figure(self.write("r.jsonl", marked), "--status", "all", "--y", "memory.total_bytes")
        legend = [a.get_legend() for a in fig.axes if a.get_legend() is not None][0]
        self.assertNotIn("zero1", [t.get_text() for t in legend.get_texts()])

    def test_the_default_output_is_next_to_the_results_in_a_dotted_folder(self):
        folder = os.path.join(self.tmp, "d.v2")
        os.makedirs(folder)
        path = os.path.join(folder, "results")
        with open(path, "w", encoding="utf-8") as f:
            for row in rows():
                f.write(json.dumps(row) + "\n")
        with contextlib.redirect_stderr(io.StringIO()):
            plot_sweep.main([path])
        self.assertTrue(os.path.exists(os.path.join(folder, "results.png")))


SCHEDULES = ["gpipe", "1f1b"]  # the sweep's order, not alphabetical
STAGES = [1, 2, 4]
MICRO = [1, 2]


def step_time(schedule, pp, mb):
    """A made-up step time: 10 s split over the stages, 1 s a sequence of micro-batch, 1 s more for GPipe."""
    return 10 / pp + mb + (1 if schedule == "gpipe" else 0)


def pipeline_rows():
    """A schedule x pp x micro-batch sweep: 2 x 3 x 2 = 12 ok rows."""
    out = []
    for k, (schedule, pp, mb) in enumerate((s, p, m) for s in SCHEDULES for p in STAGES for m in MICRO):
        out.append({"index": k, "sweep": "0123456789abcdef", "version": "0.22.0", "points": 12,
                    "point": {"strategy.schedule": schedule, "strategy.pp": pp, "training.micro_batch": mb},
                    "status": "ok", "simulation.step_time_s": step_time(schedule, pp, mb),
                    "simulation.mfu": 0.1 * mb + 0.05 * pp, "memory.total_bytes": 48e9 + 8e9 * mb})
    return out


def panels(fig):
    """The plotting panels of a figure (the legend, x-label and footnote rows have their axis turned off)."""
    return [ax for ax in fig.axes if ax.axison]


def position(ax):
    spec = ax.get_subplotspec()
    return spec.rowspan.start, spec.colspan.start


class Where(Files, unittest.TestCase):
    """--where keeps the rows that match; a misspelt axis or value is refused with exit 2, naming what is there."""

    def selected(self, *wheres):
        frame, axes, _ = self.load(self.write("p.jsonl", pipeline_rows()))
        return plot_sweep.apply_where(frame, axes, [plot_sweep.parse_where(w) for w in wheres])

    def test_values_sets_and_bounds_select_rows(self):
        # 12 rows = 2 schedules x 3 stage counts x 2 micro-batch sizes; one pp value keeps 2 x 2 = 4.
        self.assertEqual(len(self.selected("strategy.pp=2")), 4)
        self.assertEqual(len(self.selected("strategy.pp=1,4")), 8)
        self.assertEqual(len(self.selected("strategy.pp<=2")), 8)
        self.assertEqual(len(self.selected("strategy.pp>=2")), 8)
        self.assertEqual(len(self.selected("strategy.pp>2")), 4)
        self.assertEqual(len(self.selected("strategy.pp<2")), 4)
        self.assertEqual(len(self.selected("strategy.pp=2.0")), 4, "numbers compare as numbers")
        self.assertEqual(len(self.selected("strategy.schedule=1f1b", "training.micro_batch=2")), 3)
        kept = self.selected("strategy.schedule=gpipe", "strategy.pp>=2", "training.micro_batch=1")
        self.assertEqual(sorted(kept["strategy.pp"]), [2, 4])

    def test_a_figure_can_be_compared_too(self):
        # MFU 0.1 mb + 0.05 pp >= 0.3 holds for (mb 2, pp 2) and (mb 2, pp 4) and (mb 1, pp 4): 3 per schedule.
        self.assertEqual(len(self.selected("simulation.mfu>=0.3")), 6)

    def refusal(self, *wheres):
        path = self.write("p.jsonl", pipeline_rows())
        argv = [path, "--out", os.path.join(self.tmp, "x.png")]
        for w in wheres:
            argv += ["--where", w]
        stderr = io.StringIO()
        with self.assertRaises(SystemExit) as caught, contextlib.redirect_stderr(stderr):
            plot_sweep.main(argv)
        self.assertEqual(caught.exception.code, 2)
        return stderr.getvalue()

    def test_an_unknown_axis_is_refused_naming_the_axes_and_their_values(self):
        message = self.refusal("strategy.ppp=2")
        for part in ("strategy.ppp", "did you mean strategy.pp?", "strategy.pp (1, 2, 4)",
                     "strategy.schedule (gpipe, 1f1b)", "training.micro_batch (1, 2)"):
            self.assertIn(part, message)

    def test_a_value_no_row_has_is_refused_naming_the_values_present(self):
        message = self.refusal("strategy.pp=3")
        self.assertIn("no row has strategy.pp=3 (strategy.pp has 1, 2, 4)", message)
        self.assertIn("no row has strategy.pp=8", self.refusal("strategy.pp=1,8"))
        self.assertIn("strategy.schedule has gpipe, 1f1b", self.refusal("strategy.schedule=zb"))
        self.assertIn("no row has strategy.pp>4", self.refusal("strategy.pp>4"))
        self.assertIn("strategy.schedule is not numeric", self.refusal("strategy.schedule<=2"))
        self.assertIn("no row matches all of them", self.refusal("strategy.pp=1", "simulation.mfu>=0.3"))

    def test_a_malformed_where_is_a_usage_error(self):
        with self.assertRaises(SystemExit) as caught, contextlib.redirect_stderr(io.StringIO()):
            plot_sweep.parse_args(["r.jsonl", "--where", "strategy.pp"])
        self.assertEqual(caught.exception.code, 2)

    def test_json_values_with_commas_match_whole(self):
        rows = [dict(r, point=dict(r["point"], **{"strategy.placement": {"optimizer": "sharded", "grads": "x"}}))
                for r in pipeline_rows()]
        frame, axes, _ = self.load(self.write("j.jsonl", rows))
        text = '{"optimizer": "sharded", "grads": "x"}'
        self.assertEqual(len(plot_sweep.apply_where(frame, axes, [("strategy.placement", "=", text)])), 12)


class Facets(Files, unittest.TestCase):
    """--col and --row draw a grid of panels; several --y take the other direction; one legend for all."""

    def test_col_draws_a_panel_per_value_sharing_y(self):
        fig = self.figure(self.write("p.jsonl", pipeline_rows()), "--x", "training.micro_batch",
                          "--hue", "strategy.schedule", "--col", "strategy.pp", "--y", "simulation.step_time_s")
        axes = panels(fig)
        self.assertEqual(len(axes), len(STAGES))
        self.assertEqual([ax.get_title() for ax in axes], ["pp = 1", "pp = 2", "pp = 4"])
        self.assertTrue(all(axes[0].get_shared_y_axes().joined(axes[0], ax) for ax in axes[1:]))
        self.assertEqual([ax.get_ylabel() for ax in axes], ["step time [s]", "", ""])
        # The panel of pp = 2 draws only its rows: GPipe at mb 1 and 2 takes 10/2 + mb + 1 s.
        gpipe = [line for line in axes[1].get_lines() if line.get_label() == "gpipe"][0]
        self.assertEqual(list(gpipe.get_ydata()), [10 / 2 + 1 + 1, 10 / 2 + 2 + 1])
        self.assertEqual(len([a for a in fig.axes if a.get_legend() is not None]), 1, "one legend")

    def test_col_with_several_y_puts_each_y_on_a_row(self):
        fig = self.figure(self.write("p.jsonl", pipeline_rows()), "--x", "training.micro_batch",
                          "--hue", "strategy.schedule", "--col", "strategy.pp", "--y", "simulation.step_time_s",
                          "--y", "memory.total_bytes")
        axes = panels(fig)
        self.assertEqual(len(axes), 2 * len(STAGES))
        rows = {}
        for ax in axes:
            rows.setdefault(position(ax)[0], []).append(ax)
        first, second = sorted(rows)
        self.assertEqual([ax.get_ylabel() for ax in rows[first]], ["step time [s]", "", ""])
        self.assertEqual([ax.get_ylabel() for ax in rows[second]], ["memory per GPU [GB]", "", ""])
        self.assertFalse(rows[first][0].get_shared_y_axes().joined(rows[first][0], rows[second][0]),
                         "different figures keep their own scale")

    def test_row_with_several_y_puts_each_y_in_a_column(self):
        fig = self.figure(self.write("p.jsonl", pipeline_rows()), "--x", "strategy.pp", "--hue", "strategy.schedule",
                          "--row", "training.micro_batch", "--y", "simulation.step_time_s", "--y", "simulation.mfu")
        axes = panels(fig)
        self.assertEqual(len(axes), len(MICRO) * 2)
        self.assertEqual(len({position(ax)[1] for ax in axes}), 2, "a column per --y")
        margins = [t.get_text() for ax in axes for t in ax.texts]
        self.assertEqual(sorted(margins), ["micro-batch = 1", "micro-batch = 2"])

    def test_col_and_row_together(self):
        path = self.write("p.jsonl", pipeline_rows())
        fig = self.figure(path, "--x", "training.micro_batch", "--hue", "strategy.schedule", "--col", "strategy.pp",
                          "--row", "strategy.schedule", "--y", "simulation.step_time_s", "--label",
                          "strategy.pp=stages")
        axes = panels(fig)
        self.assertEqual(len(axes), len(STAGES) * len(SCHEDULES))
        self.assertEqual(sorted({ax.get_title() for ax in axes} - {""}), ["stages = 1", "stages = 2", "stages = 4"])
        with self.assertRaises(SystemExit) as caught, contextlib.redirect_stderr(io.StringIO()):
            plot_sweep.parse_args([path, "--col", "strategy.pp", "--row", "strategy.schedule", "--y", "a", "--y", "b"])
        self.assertEqual(caught.exception.code, 2)
        with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
            plot_sweep.parse_args([path, "--col", "strategy.pp", "--row", "strategy.pp"])

    def test_a_facet_axis_is_not_picked_as_the_default_hue(self):
        path = self.write("p.jsonl", pipeline_rows())
        args = plot_sweep.parse_args([path, "--col", "strategy.schedule"])
        frame, axes, _ = self.load(path)
        plot_sweep.defaults(frame, axes, args)
        self.assertEqual((args.x, args.hue), ("strategy.pp", "training.micro_batch"))

    def test_the_command_line_writes_a_faceted_figure(self):
        png = os.path.join(self.tmp, "f.png")
        with contextlib.redirect_stderr(io.StringIO()):
            plot_sweep.main([self.write("p.jsonl", pipeline_rows()), "--col", "strategy.schedule", "--size", "page",
                             "--out", png])
        self.assertEqual(png_size(png)[0], 7 * 300)


class Reduction(Files, unittest.TestCase):
    """Axes that vary within one point are named: on stderr and in a footnote of the figure."""

    def test_the_warning_names_exactly_the_reduced_axes(self):
        warnings = []
        fig = self.figure(self.write("p.jsonl", pipeline_rows()), "--x", "strategy.pp", "--hue", "strategy.schedule",
                          "--y", "simulation.step_time_s", warnings=warnings)
        self.assertEqual(warnings, [
            "plot_sweep.py: warning: each point is the min of simulation.step_time_s over training.micro_batch (1, 2); "
            "fix them with --where or show them with --hue/--col/--row"])
        notes = [t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid() == "note"]
        self.assertEqual(notes, ["each point is the min over micro-batch (1, 2)."])
        # The minimum over micro-batch sizes is at mb = 1: GPipe 10/pp + 1 + 1.
        gpipe = [line for ax in panels(fig) for line in ax.get_lines() if line.get_label() == "gpipe"][0]
        self.assertEqual(list(gpipe.get_ydata()), [10 / pp + 2 for pp in STAGES])

    def test_two_reduced_axes_and_the_agg(self):
        frame, _, _ = self.load(self.write("p.jsonl", pipeline_rows()))
        args = plot_sweep.parse_args(["p.jsonl", "--x", "strategy.pp", "--hue", "strategy.pp", "--agg", "mean",
                                      "--y", "simulation.mfu"])
        self.assertEqual(plot_sweep.reductions(frame, args),
                         [(["simulation.mfu"], ["strategy.schedule", "training.micro_batch"])])
        warnings, note = plot_sweep.reduction_messages(frame, args)
        self.assertIn("the mean of simulation.mfu over strategy.schedule (gpipe, 1f1b) and training.micro_batch "
                      "(1, 2)", warnings[0])
        self.assertEqual(note, "each point is the mean over schedule (gpipe, 1f1b) and micro-batch (1, 2).")

    def test_no_warning_when_nothing_is_reduced(self):
        path = self.write("p.jsonl", pipeline_rows())
        base = ["--x", "strategy.pp", "--hue", "strategy.schedule", "--y", "simulation.step_time_s"]
        for extra in (["--col", "training.micro_batch"], ["--row", "training.micro_batch"],
                      ["--where", "training.micro_batch=2"], ["--agg", "none"]):
            warnings = []
            fig = self.figure(path, *base, *extra, warnings=warnings)
            self.assertEqual(warnings, [], extra)
            self.assertEqual([t for ax in fig.axes for t in ax.texts if t.get_gid() == "note"], [], extra)
        warnings = []
        self.figure(self.write("r.jsonl", rows()), "--y", "memory.total_bytes", warnings=warnings)
        self.assertEqual(warnings, [], "preset x dp drawn as hue and x")

    def test_an_axis_varied_jointly_with_x_is_not_reduced(self):
        # A joint axis "strategy.dp,strategy.pp" on 8 GPUs: dp = 8 / pp, so each pp has one dp.
        joint = [dict(r, point=dict(r["point"], **{"strategy.dp": 8 // r["point"]["strategy.pp"]}))
                 for r in pipeline_rows()]
        frame, _, _ = self.load(self.write("j.jsonl", joint))
        args = plot_sweep.parse_args(["j.jsonl", "--x", "strategy.pp", "--hue", "strategy.schedule",
                                      "--y", "simulation.step_time_s"])
        self.assertEqual(plot_sweep.reductions(frame, args), [(["simulation.step_time_s"], ["training.micro_batch"])])

    def test_no_note_keeps_the_warning(self):
        warnings = []
        fig = self.figure(self.write("p.jsonl", pipeline_rows()), "--x", "strategy.pp", "--hue", "strategy.schedule",
                          "--no-note", warnings=warnings)
        self.assertEqual(len(warnings), 1)
        self.assertEqual([t for ax in fig.axes for t in ax.texts if t.get_gid() == "note"], [])


class LabelTable(Files, unittest.TestCase):
    """Fields are named with units, and their values drawn in those units."""

    def test_names_of_the_sweep_figures_and_common_axes(self):
        self.assert_labels({
            "simulation.step_time_s": "step time [s]",
            "device_memory_bytes": "GPU memory [GB]",
            "memory.model_states_bytes": "model-state memory per GPU [GB]",
            "compute.model_flops_per_step": "model FLOPs per step [PFLOP]",
            "strategy.microbatches": "micro-batches per step",
            "pipeline.microbatches": "micro-batches per step",
            "pipeline.schedule_bubble_fraction_mean": "schedule bubble [%]",
            "training.micro_batch": "micro-batch size [sequences]",
        })
        self.assertEqual(plot_sweep.short_label("strategy.dp"), "dp")
        self.assertEqual(plot_sweep.short_label("cluster.nodes"), "nodes")
        self.assertEqual(plot_sweep.label("strategy.dp", {"strategy.dp": "GPUs"}), "GPUs")

    def test_every_default_sweep_figure_has_a_name(self):
        # The figures docs/sweeps.md lists as the sweep's defaults, in analyze and simulate mode.
        for path in ("memory.total_bytes", "memory.model_states_bytes", "communication.bytes_per_step",
                     "compute.model_flops_per_step", "device_memory_bytes", "simulation.step_time_s",
                     "simulation.mfu", "simulation.tokens_per_s"):
            self.assertIn(path, plot_sweep.FIELDS)

    def test_bytes_are_drawn_in_gb_and_fractions_in_percent(self):
        fig = self.figure(self.write("p.jsonl", pipeline_rows()), "--x", "training.micro_batch", "--hue",
                          "strategy.schedule", "--where", "strategy.pp=2", "--y", "memory.total_bytes",
                          "--y", "simulation.mfu")
        memory, mfu = panels(fig)
        gpipe = [line for line in memory.get_lines() if line.get_label() == "gpipe"][0]
        self.assertEqual(list(gpipe.get_ydata()), [48 + 8 * 1, 48 + 8 * 2])  # 48e9 + 8e9 mb bytes, in GB
        gpipe = [line for line in mfu.get_lines() if line.get_label() == "gpipe"][0]
        for drawn, mb in zip(gpipe.get_ydata(), MICRO):
            self.assertAlmostEqual(drawn, 100 * (0.1 * mb + 0.05 * 2))  # pp = 2, as a percentage
        self.assertEqual(mfu.get_ylabel(), "MFU [%]")

    def test_a_byte_axis_on_x_is_drawn_in_its_unit(self):
        sized = [dict(r, point=dict(r["point"], **{"strategy.bucket_bytes": 25e6 * r["point"]["strategy.pp"]}))
                 for r in pipeline_rows()]
        fig = self.figure(self.write("b.jsonl", sized), "--x", "strategy.bucket_bytes", "--hue", "strategy.schedule",
                          "--where", "training.micro_batch=1", "--y", "simulation.step_time_s", "--linear")
        ax = panels(fig)[0]
        self.assertEqual(ax.get_xlabel(), "gradient bucket [MB]")
        self.assertEqual(list(ax.get_lines()[0].get_xdata()), [25.0, 50.0, 100.0])


if __name__ == "__main__":
    unittest.main()

#include <catch2/catch.hpp>
#include <cctype>
#include <cstring>
#include <regex>

#include "tests/Helpers.hpp"
#include "tests/TraceFixtures.hpp"
#include "tests/XmlCheck.hpp"
#include "traces/output/OutputFile.hpp"
#include "traces/svg/Svg.hpp"
#include "traces/svg/SvgPlot.hpp"
#include "workloads/json/Error.hpp"

using namespace placesim;
using Catch::Contains;
using placesim::test::run_placesim;
using placesim::test::ScratchFile;
using placesim::test::two_stage_record;
using placesim::test::xml_problem;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string svg_of(const SimulationRecord& r, const SvgOptions& options, SvgSummary* summary = nullptr) {
  ScratchFile file("timeline.svg");
  SvgSummary s = write_timeline_svg(file.path, r, options);
  if (summary) *summary = s;
  return read_text_file(file.path);
}

/// `devices` devices (8 data-parallel ranks per stage, tp 1), each with one forward task.
SimulationRecord many_devices(int devices) {
  SimulationRecord r;
  for (int d = 0; d < devices; ++d) {
    r.devices.push_back(DeviceInfo{d / 8, d % 8, d % 8, 0, d / 8});
    TaskRecord t;
    t.device = d;
    t.start_s = 0.001 * d;
    t.end_s = t.start_s + 0.001;
    r.tasks.push_back(t);
  }
  r.step_time_s = 0.001 * devices;
  return r;
}

/// One device with compute tasks on its compute stream; `tasks` lists {kind, micro-batch, start us, end us}. The
/// step lasts 1330 us, so that the default 1600 px picture (250 px of labels, 20 px margin) draws 1 px per us.
struct TaskSpec {
  TaskKind kind;
  int microbatch;
  double start_us, end_us;
};
SimulationRecord one_device(const std::vector<TaskSpec>& tasks) {
  SimulationRecord r;
  r.devices = {DeviceInfo{}};
  for (const TaskSpec& spec : tasks) {
    TaskRecord t;
    t.kind = spec.kind;
    t.microbatch = spec.microbatch;
    t.start_s = spec.start_us * 1e-6;
    t.end_s = spec.end_us * 1e-6;
    t.name = to_string(spec.kind) + std::string(" mb") + std::to_string(spec.microbatch);
    r.tasks.push_back(t);
  }
  r.step_time_s = 1330e-6;
  return r;
}

/// A mesh of pp stages x tp ranks (dp 1), device index pp * tp + t, one forward task each.
SimulationRecord stages_by_tp(int pp, int tp) {
  SimulationRecord r;
  for (int d = 0; d < pp * tp; ++d) {
    r.devices.push_back(DeviceInfo{d / 8, d % 8, 0, d % tp, d / tp});
    TaskRecord t;
    t.device = d;
    t.start_s = 0.001 * (d / tp);
    t.end_s = t.start_s + 0.001;
    r.tasks.push_back(t);
  }
  r.step_time_s = 0.001 * pp;
  return r;
}

/// Every font size the document states, in CSS (`font-size:Npx`) or as an attribute (`font-size="N"`).
std::vector<double> font_sizes(const std::string& svg) {
  std::vector<double> sizes;
  static const std::regex size(R"(font-size(?::|=")\s*([0-9.]+))");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), size); it != std::sregex_iterator(); ++it)
    sizes.push_back(std::stod((*it)[1]));
  return sizes;
}

/// The classes of <text> elements without a CSS rule stating their font size (the first class sets it).
std::vector<std::string> text_classes_without_size(const std::string& svg) {
  std::vector<std::string> missing;
  static const std::regex text(R"(<text[^>]* class="([a-z]+))");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text); it != std::sregex_iterator(); ++it)
    if (svg.find("." + (*it)[1].str() + "{font-size:") == std::string::npos) missing.push_back((*it)[1]);
  return missing;
}

}  // namespace

TEST_CASE("the xml checker itself refuses malformed documents") {
  CHECK(xml_problem("<a><b/></a>").empty());
  CHECK(xml_problem("<a x=\"1 &amp; 2\">t &lt; u</a>").empty());
  CHECK_FALSE(xml_problem("<a><b></a>").empty());
  CHECK_FALSE(xml_problem("<a>x & y</a>").empty());
  CHECK_FALSE(xml_problem("<a x=\"<\"/>").empty());
  CHECK_FALSE(xml_problem("<a x=1/>").empty());
  CHECK_FALSE(xml_problem("<a/><b/>").empty());
  CHECK_FALSE(xml_problem("<a>").empty());
}

TEST_CASE("the SVG overview is well-formed with one box per task") {
  SvgSummary summary;
  std::string svg = svg_of(two_stage_record(), SvgOptions{}, &summary);
  CHECK(xml_problem(svg) == "");
  // Per device: 9 compute, 1 merged collective, and 3 P2P boxes between pp-send and pp-recv.
  CHECK(summary.devices == 2);
  CHECK(summary.boxes == 2 * (9 + 1 + 3));
  CHECK(count(svg, "<rect class=\"box ") == summary.boxes);
  CHECK(count(svg, "<polyline class=\"mem\"") == 2);
  CHECK(count(svg, "memory, peak") == 2);
  CHECK(svg.find("node0/gpu1 [dp0 pp1 tp0]") != std::string::npos);
  CHECK(svg.find(">forward</text>") != std::string::npos);  // legend
  CHECK(svg.find(">14 ms</text>") != std::string::npos);    // last tick of the time axis
  // Per device, forward mb0, mb1 and backward mb0, mb1: two layer tasks each, one block, one number.
  CHECK(summary.labels == 2 * 4);
}

TEST_CASE("fine detail draws every collective step") {
  SvgSummary summary;
  svg_of(two_stage_record(), SvgOptions{TraceOptions{{}, TraceDetail::Fine}, ""}, &summary);
  CHECK(summary.boxes == 2 * (9 + 3 + 3));
}

TEST_CASE("the device selection applies to the SVG") {
  SvgSummary summary;
  std::string svg = svg_of(two_stage_record(), SvgOptions{TraceOptions{{1}}, ""}, &summary);
  CHECK(xml_problem(svg) == "");
  CHECK(summary.devices == 1);
  CHECK(summary.boxes == 9 + 1 + 3);
  CHECK(svg.find("node0/gpu0") == std::string::npos);
}

TEST_CASE("task names are escaped in tooltips") {
  SimulationRecord r = two_stage_record();
  r.tasks[0].name = "fwd <L0> & \"mb0\"";
  std::string svg = svg_of(r, SvgOptions{});
  CHECK(xml_problem(svg) == "");
  CHECK(svg.find("fwd &lt;L0&gt; &amp; &quot;mb0&quot;") != std::string::npos);
}

TEST_CASE("rows are capped and the omitted devices are counted") {
  SvgSummary summary;
  std::string svg = svg_of(many_devices(40), SvgOptions{TraceOptions{}, "forty", 32}, &summary);
  CHECK(xml_problem(svg) == "");
  CHECK(summary.devices == 32);
  CHECK(summary.devices_omitted == 8);
  CHECK(summary.boxes == 32);
  CHECK(svg.find("8 more selected devices are not drawn") != std::string::npos);
  CHECK(svg.find("forty") != std::string::npos);
}

TEST_CASE("sub-pixel tasks of one kind share a box") {
  SimulationRecord r = many_devices(1);
  r.tasks.clear();
  for (int i = 0; i < 1000; ++i) {  // 1000 tasks of 1 us in 1 ms: a tenth of a pixel each
    TaskRecord t;
    t.start_s = i * 1e-6;
    t.end_s = t.start_s + 1e-6;
    t.kind = i < 500 ? TaskKind::Forward : TaskKind::Backward;
    r.tasks.push_back(t);
  }
  r.step_time_s = 1e-2;
  SvgSummary summary;
  std::string svg = svg_of(r, SvgOptions{}, &summary);
  CHECK(xml_problem(svg) == "");
  CHECK(summary.boxes == 2);
  CHECK(svg.find("500 forward tasks") != std::string::npos);
}

TEST_CASE("the same record gives a byte-identical SVG") {
  CHECK(svg_of(two_stage_record(), SvgOptions{}) == svg_of(two_stage_record(), SvgOptions{}));
}

TEST_CASE("impossible SVG options are input errors") {
  CHECK_THROWS_AS(svg_of(two_stage_record(), SvgOptions{TraceOptions{}, "", 0}), InputError);
  CHECK_THROWS_AS(svg_of(two_stage_record(), SvgOptions{TraceOptions{}, "", 8, 100}), InputError);
}

TEST_CASE("time window values: seconds or units, and one clear error naming --time-window per bad value") {
  TimeWindow w = parse_time_window("10.5:12");
  CHECK(w.start_s == 10.5);
  CHECK(w.end_s == 12);
  w = parse_time_window("200ms:350ms");
  CHECK(w.start_s == Approx(0.2).epsilon(1e-15));
  CHECK(w.end_s == Approx(0.35).epsilon(1e-15));
  CHECK(parse_time_window("0:1500us").end_s == Approx(1.5e-3).epsilon(1e-15));
  for (const char* bad : {"12:10", "5:5", "-1:2", "a:b", "10", "1:2:3", "1:", ":2", "1x:2", "nan:1", "0:inf"})
    CHECK_THROWS_WITH(parse_time_window(bad), Contains("--time-window=" + std::string(bad)));
  CHECK_THROWS_WITH(parse_time_window("12:10"), Contains("the end must be after the start"));
  CHECK_THROWS_WITH(parse_time_window("-1:2"), Contains("must not be negative"));
  // Simulated time is in nanoseconds: a window must span one, and end before 9e9 s.
  CHECK_THROWS_WITH(parse_time_window("0:1e-10"), Contains("the window must span at least 1 ns"));
  CHECK_THROWS_WITH(parse_time_window("0.5:0.5000000001"), Contains("the window must span at least 1 ns"));
  CHECK(parse_time_window("0:1ns").end_s == Approx(1e-9));
  CHECK_THROWS_WITH(parse_time_window("0:1e300"), Contains("the end lies beyond 9e9 s"));
}

TEST_CASE("a time window draws only the tasks overlapping it, clipped, on an axis spanning it") {
  // Four 1 ms forward tasks (micro-batches 0-3) back to back; the window 1.5-3.5 ms is 1330 px: 665 px per ms.
  SimulationRecord r = one_device({{TaskKind::Forward, 0, 0, 1000},
                                   {TaskKind::Forward, 1, 1000, 2000},
                                   {TaskKind::Forward, 2, 2000, 3000},
                                   {TaskKind::Forward, 3, 3000, 4000}});
  r.step_time_s = 4e-3;
  SvgOptions options;
  options.window = parse_time_window("1.5ms:3.5ms");
  SvgSummary summary;
  std::string svg = svg_of(r, options, &summary);
  CHECK(xml_problem(svg) == "");
  CHECK(summary.boxes == 3);  // mb0 ends before the window
  CHECK(svg.find("forward mb0") == std::string::npos);
  // mb1 clipped to 1.5-2 ms and mb3 to 3-3.5 ms; mb1 and mb2 end a pixel early, as the next block adjoins them.
  CHECK(svg.find("<rect class=\"box k0\" x=\"250.00\" y=\"72.00\" width=\"331.50\" height=\"16.00\"><title>forward "
                 "mb1 (1.000 ms)</title>") != std::string::npos);
  CHECK(svg.find("x=\"582.50\" y=\"72.00\" width=\"664.00\"") != std::string::npos);
  CHECK(svg.find("x=\"1247.50\" y=\"72.00\" width=\"332.50\"") != std::string::npos);
  // Ticks every 0.5 ms from the window's start to its end.
  for (const char* tick : {">1.5 ms</text>", ">2.0 ms</text>", ">3.0 ms</text>", ">3.5 ms</text>"})
    CHECK(svg.find(tick) != std::string::npos);
  CHECK(svg.find(">1.0 ms</text>") == std::string::npos);
  CHECK(svg.find(">4.0 ms</text>") == std::string::npos);
  CHECK(svg.find("window 1.500 ms to 3.500 ms") != std::string::npos);
}

TEST_CASE("a time window may end after the step but not start after it") {
  SimulationRecord r = one_device({{TaskKind::Forward, 0, 0, 1000}});
  SvgOptions options;
  options.window = parse_time_window("1ms:5ms");  // the step lasts 1.33 ms
  SvgSummary summary;
  CHECK(xml_problem(svg_of(r, options, &summary)) == "");
  CHECK(summary.boxes == 0);
  options.window = parse_time_window("2ms:5ms");
  CHECK_THROWS_WITH(svg_of(r, options), Contains("--time-window=2ms:5ms starts at or after the end of the step"));
}

TEST_CASE("one row per pipeline stage: tp ranks of a stage run the same schedule") {
  SvgSummary summary;
  std::string svg = svg_of(stages_by_tp(4, 8), SvgOptions{}, &summary);
  CHECK(xml_problem(svg) == "");
  CHECK(summary.devices == 4);
  CHECK(summary.tp_ranks_hidden == 4 * 7);
  CHECK(count(svg, " tp0]</text>") == 4);
  CHECK(count(svg, " tp1]</text>") == 0);
  CHECK(svg.find("tp ranks 1-7 of each stage not drawn (same schedule as tp0)") != std::string::npos);
  CHECK(svg.find("4 devices") != std::string::npos);

  SvgOptions all;
  all.all_tp_ranks = true;
  svg = svg_of(stages_by_tp(4, 8), all, &summary);
  CHECK(summary.devices == 32);
  CHECK(summary.tp_ranks_hidden == 0);
  CHECK(svg.find("not drawn") == std::string::npos);

  svg = svg_of(stages_by_tp(3, 2), SvgOptions{}, &summary);
  CHECK(summary.devices == 3);
  CHECK(svg.find("tp rank 1 of each stage not drawn") != std::string::npos);
}

TEST_CASE("rows per stage keep the devices a selection names, and data-parallel ranks") {
  SimulationRecord r = stages_by_tp(2, 4);
  SvgSummary summary;
  // tp2 and tp3 of each stage: tp2 is drawn, tp3 is not.
  std::string svg = svg_of(r, SvgOptions{TraceOptions{{2, 3, 6, 7}}, ""}, &summary);
  CHECK(summary.devices == 2);
  CHECK(count(svg, " tp2]</text>") == 2);
  CHECK(svg.find("tp rank 3 of each stage not drawn (same schedule as tp2)") != std::string::npos);
  // A selection drawing tp 3 of one stage and tp 2 of another: the note does not claim "of each stage".
  svg = svg_of(r, SvgOptions{TraceOptions{{3, 6, 7}}, ""}, &summary);
  CHECK(summary.devices == 2);
  CHECK(svg.find("of each stage") == std::string::npos);
  CHECK_THAT(svg, Contains("1 device not drawn: a higher tp rank of a drawn device"));
  // Data-parallel ranks differ in more than tp: each keeps its row.
  svg_of(many_devices(16), SvgOptions{}, &summary);
  CHECK(summary.devices == 16);
  CHECK(summary.tp_ranks_hidden == 0);
}

TEST_CASE("micro-batch numbers sit on the compute blocks wide enough for them") {
  // 1 px per us. A number needs 7 px per digit and 4 px of margin: 11 px for one digit, 18 px for two.
  SimulationRecord r =
      one_device({{TaskKind::Forward, 7, 0, 20},      // 20 px, ends 1 px early (mb12 adjoins): 19 px, labelled
                  {TaskKind::Forward, 12, 20, 32},    // 12 px - 1: too narrow for "12"
                  {TaskKind::Forward, 13, 32, 52},    // 20 px, nothing adjoins: labelled
                  {TaskKind::Forward, 100, 60, 80},   // 20 px: too narrow for "100"
                  {TaskKind::Backward, 5, 100, 106},  // two layer tasks of mb5: one block of 12 px - 1, labelled once
                  {TaskKind::Backward, 5, 106, 112},  //
                  {TaskKind::Optimizer, -1, 112, 200}});  // no micro-batch
  SvgSummary summary;
  std::string svg = svg_of(r, SvgOptions{}, &summary);
  CHECK(xml_problem(svg) == "");
  CHECK(summary.boxes == 7);
  CHECK(summary.labels == 3);
  CHECK(count(svg, "class=\"mb mid\"") == 3);
  CHECK(svg.find("<text x=\"259.50\" y=\"84.50\" class=\"mb mid\">7</text>") != std::string::npos);
  CHECK(svg.find("<text x=\"292.00\" y=\"84.50\" class=\"mb mid\">13</text>") != std::string::npos);
  CHECK(svg.find("<text x=\"355.50\" y=\"84.50\" class=\"mb mid\">5</text>") != std::string::npos);
  // Widths: a block another adjoins ends 1 px early; boxes inside a block stay joined.
  for (const char* box : {"x=\"250.00\" y=\"72.00\" width=\"19.00\"", "x=\"270.00\" y=\"72.00\" width=\"11.00\"",
                          "x=\"282.00\" y=\"72.00\" width=\"20.00\"", "x=\"310.00\" y=\"72.00\" width=\"20.00\"",
                          "x=\"350.00\" y=\"72.00\" width=\"6.00\"", "x=\"356.00\" y=\"72.00\" width=\"5.00\"",
                          "x=\"362.00\" y=\"72.00\" width=\"88.00\""})
    CHECK(svg.find(box) != std::string::npos);
}

TEST_CASE("the layers of a micro-batch form one block across gaps, backward with its recompute") {
  SimulationRecord r = one_device({{TaskKind::Forward, 4, 0, 6},  // two layers of 6 px, 2 px apart (a TP collective)
                                   {TaskKind::Forward, 4, 8, 14},
                                   {TaskKind::Recompute, 4, 20, 26},  // recompute and backward of one layer
                                   {TaskKind::Backward, 4, 26, 32},
                                   {TaskKind::Backward, 3, 32, 38}});  // adjoins: parts the mb4 block
  SvgSummary summary;
  std::string svg = svg_of(r, SvgOptions{}, &summary);
  CHECK(summary.boxes == 5);
  CHECK(summary.labels == 2);
  CHECK(svg.find("<text x=\"257.00\" y=\"84.50\" class=\"mb mid\">4</text>") != std::string::npos);
  CHECK(svg.find("<text x=\"275.50\" y=\"84.50\" class=\"mb mid\">4</text>") != std::string::npos);
  CHECK(svg.find("x=\"276.00\" y=\"72.00\" width=\"5.00\"") != std::string::npos);  // backward mb4, 1 px early
  CHECK(svg.find("x=\"282.00\" y=\"72.00\" width=\"6.00\"") != std::string::npos);  // mb3: 6 px, too narrow
}

TEST_CASE("a hundred back-to-back micro-batches stay a hundred blocks") {
  std::vector<TaskSpec> tasks;
  for (int mb = 0; mb < 100; ++mb) tasks.push_back({TaskKind::Forward, mb, 13.3 * mb, 13.3 * (mb + 1)});
  SvgSummary summary;
  std::string svg = svg_of(one_device(tasks), SvgOptions{}, &summary);
  CHECK(xml_problem(svg) == "");
  CHECK(summary.boxes == 100);
  CHECK(count(svg, "width=\"12.30\" height=\"16.00\"") == 99);  // 13.3 px each, 1 px apart
  CHECK(count(svg, "width=\"13.30\" height=\"16.00\"") == 1);   // the last one: nothing adjoins it
  CHECK(summary.labels == 10);                                  // 12.3 px holds one digit, not two
}

TEST_CASE("all text in the SVG timeline and plots is at least 12 px") {
  SimulationRecord r = stages_by_tp(40, 2);  // both notes: tp ranks not drawn and rows past max_rows
  std::string timeline = svg_of(r, SvgOptions{});
  CHECK(timeline.find("not drawn") != std::string::npos);
  CHECK(timeline.find("more selected devices") != std::string::npos);
  std::string detailed = svg_of(one_device({{TaskKind::Forward, 3, 0, 100}}), SvgOptions{});
  PlotOptions plot;
  plot.title = "loss";
  std::string line_plot = render_line_plot({PlotSeries{"a", {1, 2, 3}, {3, 2, 1}}}, plot);
  for (const std::string* svg : {&timeline, &detailed, &line_plot}) {
    std::vector<double> sizes = font_sizes(*svg);
    CHECK_FALSE(sizes.empty());
    for (double size : sizes) CHECK(size >= 12);
    CHECK(text_classes_without_size(*svg).empty());
  }
  CHECK(count(timeline, "<text") > 0);
}

TEST_CASE("a window and micro-batch numbers keep the SVG byte-identical across runs") {
  SvgOptions options;
  options.window = parse_time_window("0.004:0.011");
  CHECK(svg_of(two_stage_record(), options) == svg_of(two_stage_record(), options));
}

TEST_CASE("placesim simulate refuses --time-window and --svg-all-ranks without --svg") {
  std::string out;
  CHECK(run_placesim("simulate " PLACESIM_SOURCE_DIR "/examples/small-3d-1f1b.json --time-window 0:0.01", &out) == 2);
  CHECK_THAT(out, Contains("--time-window=0:0.01 applies to the SVG timeline only: add --svg FILE"));
  CHECK(run_placesim("simulate " PLACESIM_SOURCE_DIR "/examples/small-3d-1f1b.json --svg-all-ranks", &out) == 2);
  CHECK_THAT(out, Contains("--svg-all-ranks applies to the SVG timeline only"));
  CHECK(run_placesim("simulate " PLACESIM_SOURCE_DIR "/examples/small-3d-1f1b.json --svg /dev/null --time-window 2:1",
                     &out) == 2);
  CHECK_THAT(out, Contains("--time-window=2:1"));
}

TEST_CASE("placesim simulate --svg draws a row per stage of a tp 2 mesh within the window") {
  // examples/small-3d-1f1b.json: dp 2 x tp 2 x pp 4, a step of 16.7 ms; dp0 selects one pipeline of 8 devices.
  ScratchFile file("small-3d.svg");
  std::string out;
  REQUIRE(run_placesim("simulate " PLACESIM_SOURCE_DIR "/examples/small-3d-1f1b.json --quiet --trace-devices dp0 "
                       "--time-window 5ms:10ms --svg " +
                           file.path,
                       &out) == 0);
  std::string svg = read_text_file(file.path);
  CHECK(xml_problem(svg) == "");
  CHECK(count(svg, "pp0 tp0]</text>") + count(svg, "pp1 tp0]</text>") + count(svg, "pp2 tp0]</text>") +
            count(svg, "pp3 tp0]</text>") ==
        4);
  CHECK(count(svg, " tp1]</text>") == 0);
  CHECK(svg.find("tp rank 1 of each stage not drawn (same schedule as tp0)") != std::string::npos);
  CHECK(svg.find("window 5.000 ms to 10.000 ms") != std::string::npos);
  CHECK(svg.find(">5 ms</text>") != std::string::npos);
  CHECK(svg.find(">10 ms</text>") != std::string::npos);
  CHECK(count(svg, "class=\"mb mid\"") > 0);
  for (double size : font_sizes(svg)) CHECK(size >= 12);
  // A window starting after the step is refused, naming the flag and the value.
  CHECK(run_placesim("simulate " PLACESIM_SOURCE_DIR "/examples/small-3d-1f1b.json --quiet --svg " + file.path +
                         " --time-window 1:2",
                     &out) == 2);
  CHECK_THAT(out, Contains("--time-window=1:2 starts at or after the end of the step"));
}

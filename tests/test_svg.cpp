#include <catch2/catch.hpp>
#include <cctype>
#include <cstring>

#include "tests/TraceFixtures.hpp"
#include "tests/XmlCheck.hpp"
#include "traces/output/OutputFile.hpp"
#include "traces/svg/Svg.hpp"
#include "workloads/json/Error.hpp"

using namespace placesim;
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

/// `devices` devices, each with one forward task.
SimulationRecord many_devices(int devices) {
  SimulationRecord r;
  for (int d = 0; d < devices; ++d) {
    r.devices.push_back(DeviceInfo{d / 8, d % 8, 0, d % 8, d / 8});
    TaskRecord t;
    t.device = d;
    t.start_s = 0.001 * d;
    t.end_s = t.start_s + 0.001;
    r.tasks.push_back(t);
  }
  r.step_time_s = 0.001 * devices;
  return r;
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

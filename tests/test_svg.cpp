#include <catch2/catch.hpp>
#include <cctype>
#include <cstring>

#include "tests/TraceFixtures.hpp"
#include "traces/OutputFile.hpp"
#include "traces/Svg.hpp"
#include "workloads/Error.hpp"

using namespace placesim;
using placesim::test::ScratchFile;
using placesim::test::two_stage_record;

namespace {

bool entity_at(const std::string& xml, std::size_t at) {
  for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
    if (xml.compare(at, std::strlen(e), e) == 0) return true;
  return false;
}

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':';
}

/// Why `xml` is not well-formed (as far as placesim's SVG goes: one root element, balanced tags, quoted
/// attributes, no raw '<' or stray '&' in text or attribute values), or "" when it is.
std::string xml_problem(const std::string& xml) {
  std::vector<std::string> open;
  int roots = 0;
  for (std::size_t i = 0; i < xml.size();) {
    if (xml.compare(i, 2, "<?") == 0) {
      auto end = xml.find("?>", i);
      if (end == std::string::npos) return "unterminated <?";
      i = end + 2;
    } else if (xml.compare(i, 2, "</") == 0) {
      auto end = xml.find('>', i);
      if (end == std::string::npos) return "unterminated end tag";
      std::string name = xml.substr(i + 2, end - i - 2);
      if (open.empty() || open.back() != name)
        return "</" + name + "> closes " + (open.empty() ? "nothing" : open.back());
      open.pop_back();
      i = end + 1;
    } else if (xml[i] == '<') {
      std::size_t j = i + 1;
      while (j < xml.size() && name_char(xml[j])) ++j;
      std::string name = xml.substr(i + 1, j - i - 1);
      if (name.empty()) return "a '<' that starts no tag at " + std::to_string(i);
      for (;;) {
        while (j < xml.size() && std::isspace(static_cast<unsigned char>(xml[j]))) ++j;
        if (j >= xml.size()) return "unterminated <" + name;
        if (xml[j] == '>' || xml.compare(j, 2, "/>") == 0) break;
        std::size_t attr = j;
        while (j < xml.size() && name_char(xml[j])) ++j;
        if (j == attr || j + 1 >= xml.size() || xml[j] != '=' || (xml[j + 1] != '"' && xml[j + 1] != '\''))
          return "malformed attribute in <" + name + ">";
        auto close = xml.find(xml[j + 1], j + 2);
        if (close == std::string::npos) return "unterminated attribute in <" + name + ">";
        for (std::size_t k = j + 2; k < close; ++k)
          if (xml[k] == '<' || (xml[k] == '&' && !entity_at(xml, k))) return "unescaped character in <" + name + ">";
        j = close + 1;
      }
      if (open.empty() && ++roots > 1) return "a second root element <" + name + ">";
      if (xml[j] == '>') open.push_back(name);
      i = j + (xml[j] == '>' ? 1 : 2);
    } else {
      if (xml[i] == '&' && !entity_at(xml, i)) return "a stray '&' at " + std::to_string(i);
      if (open.empty() && !std::isspace(static_cast<unsigned char>(xml[i]))) return "text outside the root";
      ++i;
    }
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  return roots == 1 ? "" : "no root element";
}

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

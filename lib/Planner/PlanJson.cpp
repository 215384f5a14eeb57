//===- PlanJson.cpp - plan.json, written and read back --------------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Writes a plan as plan.json (schema in docs/planner.md): one top-level
// member per line, each element of an array on its own line, numbers with 6
// significant digits. Reads a plan's decisions back (degrees, micro-batches,
// recompute, stages), validating the structure and naming the offending key
// as a JSON path; evaluatePlan recomputes the figures.
//
//===----------------------------------------------------------------------===//

#include "PlanReportInternal.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::dist;
using namespace mlir::dist::plan_report;
using llvm::ArrayRef;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// plan.json writer
//===----------------------------------------------------------------------===//

/// Renders one JSON value on one line.
static std::string
renderJson(llvm::function_ref<void(llvm::json::OStream &)> write) {
  std::string text;
  llvm::raw_string_ostream os(text);
  {
    llvm::json::OStream json(os);
    write(json);
  }
  return text;
}

/// Writes `value` with 6 significant digits (null when not finite) so that
/// hand-read figures stay short; derived figures are recomputed on read.
static void writeNumber(llvm::json::OStream &json, double value) {
  if (!std::isfinite(value)) {
    json.value(nullptr);
    return;
  }
  json.rawValue(strFormat("%.6g", value));
}

/// Writes a byte count as an integer when it is one that JSON carries.
static void writeBytes(llvm::json::OStream &json, double bytes) {
  if (std::isfinite(bytes) && std::fabs(bytes) < 9e15) {
    json.value(static_cast<int64_t>(std::llround(bytes)));
    return;
  }
  writeNumber(json, bytes);
}

static void numberAttr(llvm::json::OStream &json, StringRef key, double value) {
  json.attributeBegin(key);
  writeNumber(json, value);
  json.attributeEnd();
}

static void bytesAttr(llvm::json::OStream &json, StringRef key, double bytes) {
  json.attributeBegin(key);
  writeBytes(json, bytes);
  json.attributeEnd();
}

namespace {
/// Lays out plan.json: one top-level member per line, each element of an
/// array member on its own line, members in schema order.
class JsonDocument {
public:
  void member(StringRef key,
              llvm::function_ref<void(llvm::json::OStream &)> write) {
    members.push_back(quote(key) + ": " + renderJson(write));
  }

  void arrayMember(
      StringRef key, size_t count,
      llvm::function_ref<void(llvm::json::OStream &, size_t)> writeElement) {
    std::string text = quote(key) + ": [";
    for (size_t i = 0; i < count; ++i) {
      text += i ? ",\n    " : "\n    ";
      text +=
          renderJson([&](llvm::json::OStream &json) { writeElement(json, i); });
    }
    text += count ? "\n  ]" : "]";
    members.push_back(std::move(text));
  }

  std::string str() const {
    std::string text = "{";
    for (size_t i = 0; i < members.size(); ++i)
      text += (i ? ",\n  " : "\n  ") + members[i];
    text += "\n}\n";
    return text;
  }

private:
  static std::string quote(StringRef key) {
    return renderJson([&](llvm::json::OStream &json) { json.value(key); });
  }

  std::vector<std::string> members;
};
} // namespace

std::string mlir::dist::planToJson(const Plan &plan, const PlanRequest &req) {
  using llvm::json::OStream;
  std::vector<DeviceType> types = deviceTypesOf(req);
  JsonDocument doc;
  doc.member("version", [](OStream &json) { json.value(1); });
  doc.member("objective", [&](OStream &json) {
    json.value(stringifyObjective(plan.objective));
  });
  doc.member("strategy", [&](OStream &json) {
    json.value(stringifyPlanStrategy(plan.strategy));
  });
  doc.member("cluster", [&](OStream &json) {
    json.value(req.cluster ? validUtf8(req.cluster->name) : std::string());
  });
  doc.member("global_batch",
             [&](OStream &json) { json.value(req.globalBatch); });
  doc.member("training", [&](OStream &json) { json.value(req.training); });
  doc.member("min_throughput",
             [&](OStream &json) { writeNumber(json, req.minThroughput); });
  doc.member("degrees", [&](OStream &json) {
    json.object([&] {
      json.attribute("dp", plan.dp);
      json.attribute("tp", plan.tp);
      json.attribute("pp", plan.pp);
    });
  });
  doc.member("micro_batches",
             [&](OStream &json) { json.value(plan.microBatches); });
  doc.member("recompute", [&](OStream &json) { json.value(plan.recompute); });
  doc.member("predicted", [&](OStream &json) {
    json.object([&] {
      numberAttr(json, "step_time_ms", plan.stepTimeS * 1e3);
      numberAttr(json, "throughput_samples_per_s", plan.throughput);
      numberAttr(json, "cost_per_hour", plan.costPerHour);
      json.attribute("devices_used", plan.devicesUsed);
    });
  });
  doc.arrayMember("device_types", types.size(), [&](OStream &json, size_t i) {
    const DeviceType &type = types[i];
    json.object([&] {
      json.attribute("index", static_cast<int64_t>(i));
      json.attribute("label", validUtf8(type.label));
      json.attribute("kind",
                     type.spec ? stringifyDevKind(type.spec->kind) : "unknown");
      json.attribute("model",
                     type.spec ? validUtf8(type.spec->model) : std::string());
      json.attribute("units", type.units);
      bytesAttr(json, "memory_bytes", type.spec ? type.spec->memoryBytes : 0);
      numberAttr(json, "price_per_hour",
                 type.spec ? type.spec->pricePerHour : 0);
    });
  });
  doc.arrayMember("stages", plan.stages.size(), [&](OStream &json, size_t i) {
    const StagePlan &stage = plan.stages[i];
    json.object([&] {
      json.attribute("index", static_cast<int64_t>(i));
      json.attribute("first_layer", stage.firstLayer);
      json.attribute("last_layer", stage.lastLayer);
      json.attribute("device_type", stage.deviceType);
      json.attribute("units", stage.units);
      json.attribute("dp", stage.dp);
      json.attribute("tp", stage.tp);
      json.attribute("recompute", stage.recompute);
      numberAttr(json, "compute_ms", stage.computeTimeS * 1e3);
      numberAttr(json, "comm_ms", stage.commTimeS * 1e3);
      bytesAttr(json, "memory_bytes_per_device", stage.memoryBytesPerDevice);
      numberAttr(json, "throughput", stage.throughput);
    });
  });
  doc.arrayMember(
      "layers", static_cast<size_t>(numLayers(plan, req)),
      [&](OStream &json, size_t i) {
        int64_t layer = static_cast<int64_t>(i);
        int64_t stage = stageOfLayer(plan, layer);
        const LayerCost *cost =
            i < req.layers.size() ? &req.layers[i] : nullptr;
        json.object([&] {
          json.attribute("index", layer);
          json.attribute("name", cost ? validUtf8(cost->name) : std::string());
          json.attribute("stage", stage);
          json.attribute("device_type",
                         stage >= 0 ? plan.stages[stage].deviceType : -1);
          numberAttr(json, "fwd_gflop_per_sample",
                     cost ? fwdFlopsPerSample(*cost) / 1e9 : 0);
          bytesAttr(json, "param_bytes", cost ? allParamBytes(*cost) : 0);
          bytesAttr(json, "activation_bytes_per_sample",
                    cost ? cost->activationBytes : 0);
          json.attribute("sparse", cost ? cost->sparse : false);
          LayerTime t =
              i < plan.layerTimes.size() ? plan.layerTimes[i] : LayerTime();
          numberAttr(json, "predicted_fwd_ms", t.fwdS * 1e3);
          numberAttr(json, "predicted_bwd_ms", t.bwdS * 1e3);
          numberAttr(json, "predicted_update_ms", t.updateS * 1e3);
        });
      });
  doc.arrayMember("timeline", plan.timeline.size(),
                  [&](OStream &json, size_t i) {
                    const TimelineEvent &event = plan.timeline[i];
                    json.object([&] {
                      json.attribute("stage", event.stage);
                      json.attribute("what", validUtf8(event.what));
                      json.attribute("micro_batch", event.microBatch);
                      numberAttr(json, "start_ms", event.startS * 1e3);
                      numberAttr(json, "end_ms", event.endS * 1e3);
                    });
                  });
  if (!plan.stageActions.empty())
    doc.member("pipeline", [&](OStream &json) {
      json.object([&] {
        json.attribute("schedule",
                       ::dist_rt::pipeline::scheduleName(req.schedule));
        json.attributeArray("stages", [&] {
          for (size_t s = 0; s < plan.stageActions.size(); ++s)
            json.object([&] {
              json.attribute("actions", plan.stageActions[s]);
              numberAttr(json, "bubble",
                         s < plan.stageBubble.size() ? plan.stageBubble[s] : 0);
              json.attribute("peak_micro_batches_held",
                             s < plan.stagePeakInFlight.size()
                                 ? plan.stagePeakInFlight[s]
                                 : 0);
            });
        });
      });
    });
  doc.member("planning", [&](OStream &json) {
    json.object([&] {
      numberAttr(json, "time_ms", plan.planningTimeS * 1e3);
      json.attribute("evaluated", plan.evaluated);
    });
  });
  return doc.str();
}

//===----------------------------------------------------------------------===//
// plan.json reader
//===----------------------------------------------------------------------===//

/// Largest layer index plan.json may name (keeps a typo from allocating
/// gigabytes for the layer table).
static constexpr int64_t kMaxLayerIndex = (int64_t(1) << 24) - 1;

/// Turns llvm::json's "[L:C, byte=N]: Msg" into "invalid JSON at line L:
/// msg (column C)".
static std::string describeParseError(const std::string &message) {
  StringRef rest(message);
  unsigned line = 0, column = 0;
  if (rest.consume_front("[") && !rest.consumeInteger(10, line) &&
      rest.consume_front(":") && !rest.consumeInteger(10, column)) {
    size_t colon = rest.find("]: ");
    if (colon != StringRef::npos) {
      std::string what = rest.substr(colon + 3).str();
      if (!what.empty())
        what[0] = llvm::toLower(what[0]);
      return strFormat("invalid JSON at line %u: %s (column %u)", line,
                       what.c_str(), std::max(column, 1u));
    }
  }
  return "invalid JSON: " + message;
}

namespace {
/// Reads typed members of plan.json objects; the first error is stored in
/// `error` as "<json path>: <what>" and every read after it fails.
class PlanReader {
public:
  explicit PlanReader(std::string &error) : error(error) {}

  /// Records an error at `path` (no prefix at the top level) and returns
  /// false.
  bool fail(StringRef path, const llvm::Twine &what) {
    if (failed)
      return false;
    failed = true;
    error = printable(path.empty() ? what.str() : (path + ": " + what).str());
    return false;
  }

  /// `text` with its control characters written as escapes (\n, \t,
  /// \xNN), so that an error quoting a value from the file stays one line.
  static std::string printable(StringRef text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
      auto u = static_cast<unsigned char>(c);
      if (c == '\n')
        out += "\\n";
      else if (c == '\t')
        out += "\\t";
      else if (u < 0x20 || u == 0x7f)
        out += {'\\', 'x', llvm::hexdigit(u >> 4, /*LowerCase=*/true),
                llvm::hexdigit(u & 15, /*LowerCase=*/true)};
      else
        out += c;
    }
    return out;
  }

  /// `path.key`, or `key` at the top level.
  static std::string join(StringRef path, StringRef key) {
    return path.empty() ? key.str() : (path + "." + key).str();
  }

  /// Member `key` of `object` (at `path`), or an error naming it.
  const llvm::json::Value *get(const llvm::json::Object &object, StringRef path,
                               StringRef key) {
    const llvm::json::Value *value = object.get(key);
    if (!value)
      fail(path, "missing key '" + key + "'");
    return value;
  }

  std::optional<int64_t> readInt(const llvm::json::Object &object,
                                 StringRef path, StringRef key, bool positive) {
    const llvm::json::Value *value = get(object, path, key);
    if (!value)
      return std::nullopt;
    std::optional<int64_t> result = value->getAsInteger();
    if (!result || *result < (positive ? 1 : 0)) {
      fail(join(path, key), positive ? "expected a positive integer"
                                     : "expected a non-negative integer");
      return std::nullopt;
    }
    return result;
  }

  std::optional<bool> readBool(const llvm::json::Object &object, StringRef path,
                               StringRef key) {
    const llvm::json::Value *value = get(object, path, key);
    if (!value)
      return std::nullopt;
    std::optional<bool> result = value->getAsBoolean();
    if (!result)
      fail(join(path, key), "expected true or false");
    return result;
  }

  std::optional<std::string> readString(const llvm::json::Object &object,
                                        StringRef path, StringRef key) {
    const llvm::json::Value *value = get(object, path, key);
    if (!value)
      return std::nullopt;
    std::optional<StringRef> result = value->getAsString();
    if (!result) {
      fail(join(path, key), "expected a string");
      return std::nullopt;
    }
    return result->str();
  }

  const llvm::json::Object *readObject(const llvm::json::Object &object,
                                       StringRef path, StringRef key) {
    const llvm::json::Value *value = get(object, path, key);
    if (!value)
      return nullptr;
    const llvm::json::Object *result = value->getAsObject();
    if (!result)
      fail(join(path, key), "expected an object");
    return result;
  }

  const llvm::json::Array *readArray(const llvm::json::Object &object,
                                     StringRef path, StringRef key) {
    const llvm::json::Value *value = get(object, path, key);
    if (!value)
      return nullptr;
    const llvm::json::Array *result = value->getAsArray();
    if (!result)
      fail(join(path, key), "expected an array");
    return result;
  }

private:
  std::string &error;
  bool failed = false;
};
} // namespace

/// `"a", "b" or "c"` for the names stringify(v) of `values`.
template <typename T>
static std::string quotedChoices(ArrayRef<T> values,
                                 const char *(*stringify)(T)) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i)
      text += i + 1 == values.size() ? " or " : ", ";
    text += std::string("\"") + stringify(values[i]) + "\"";
  }
  return text;
}

/// Reads stage `index` of the "stages" array into `stage`; `nextLayer` is
/// the layer the stage must start at (stages cover the layers in order).
static bool readStage(PlanReader &reader, const llvm::json::Value &value,
                      size_t index, int64_t nextLayer, StagePlan &stage) {
  std::string path = "stages[" + std::to_string(index) + "]";
  const llvm::json::Object *object = value.getAsObject();
  if (!object)
    return reader.fail(path, "expected an object");
  std::optional<int64_t> first =
      reader.readInt(*object, path, "first_layer", /*positive=*/false);
  std::optional<int64_t> last =
      reader.readInt(*object, path, "last_layer", /*positive=*/false);
  std::optional<int64_t> deviceType =
      reader.readInt(*object, path, "device_type", /*positive=*/false);
  std::optional<int64_t> units =
      reader.readInt(*object, path, "units", /*positive=*/true);
  std::optional<int64_t> dp =
      reader.readInt(*object, path, "dp", /*positive=*/true);
  std::optional<int64_t> tp =
      reader.readInt(*object, path, "tp", /*positive=*/true);
  std::optional<bool> recompute = reader.readBool(*object, path, "recompute");
  if (!first || !last || !deviceType || !units || !dp || !tp || !recompute)
    return false;

  if (*first != nextLayer) {
    if (index == 0)
      return reader.fail(path + ".first_layer",
                         "expected 0 (the first stage starts at layer 0)");
    return reader.fail(path + ".first_layer",
                       "expected " + llvm::Twine(nextLayer) +
                           " (the layer after stages[" +
                           llvm::Twine(index - 1) + "].last_layer)");
  }
  if (*last < *first)
    return reader.fail(path + ".last_layer", "expected at least first_layer (" +
                                                 llvm::Twine(*first) + ")");
  if (*last > kMaxLayerIndex)
    return reader.fail(path + ".last_layer",
                       "expected at most " + llvm::Twine(kMaxLayerIndex));
  int64_t product = 0;
  if (llvm::MulOverflow(*dp, *tp, product) || product != *units)
    return reader.fail(path + ".units",
                       "expected dp * tp (" + llvm::Twine(*dp) + " * " +
                           llvm::Twine(*tp) + "), got " + llvm::Twine(*units));

  stage.firstLayer = *first;
  stage.lastLayer = *last;
  stage.deviceType = *deviceType;
  stage.units = *units;
  stage.dp = *dp;
  stage.tp = *tp;
  stage.recompute = *recompute;
  return true;
}

std::optional<Plan> mlir::dist::planFromJson(const std::string &json,
                                             std::string &error) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(json);
  if (!parsed) {
    error = describeParseError(llvm::toString(parsed.takeError()));
    return std::nullopt;
  }
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root) {
    error = "expected a JSON object at the top level";
    return std::nullopt;
  }

  PlanReader reader(error);
  Plan plan;

  std::optional<int64_t> version =
      reader.readInt(*root, "", "version", /*positive=*/true);
  if (!version)
    return std::nullopt;
  if (*version != 1) {
    reader.fail("version", "expected 1, got " + llvm::Twine(*version) +
                               " (this dist-opt reads version 1)");
    return std::nullopt;
  }

  std::optional<std::string> objective =
      reader.readString(*root, "", "objective");
  if (!objective)
    return std::nullopt;
  std::optional<Objective> parsedObjective = parseObjective(*objective);
  if (!parsedObjective) {
    const Objective all[] = {Objective::StepTime, Objective::Cost};
    reader.fail("objective",
                "expected " +
                    quotedChoices<Objective>(all, stringifyObjective) +
                    ", got \"" + *objective + "\"");
    return std::nullopt;
  }
  plan.objective = *parsedObjective;

  std::optional<std::string> strategy =
      reader.readString(*root, "", "strategy");
  if (!strategy)
    return std::nullopt;
  std::optional<PlanStrategy> parsedStrategy = parsePlanStrategy(*strategy);
  if (!parsedStrategy) {
    const PlanStrategy all[] = {PlanStrategy::Exact, PlanStrategy::RL,
                                PlanStrategy::Greedy, PlanStrategy::Exhaustive};
    reader.fail("strategy",
                "expected " +
                    quotedChoices<PlanStrategy>(all, stringifyPlanStrategy) +
                    ", got \"" + *strategy + "\"");
    return std::nullopt;
  }
  plan.strategy = *parsedStrategy;

  const llvm::json::Object *degrees = reader.readObject(*root, "", "degrees");
  if (!degrees)
    return std::nullopt;
  std::optional<int64_t> dp =
      reader.readInt(*degrees, "degrees", "dp", /*positive=*/true);
  std::optional<int64_t> tp =
      reader.readInt(*degrees, "degrees", "tp", /*positive=*/true);
  std::optional<int64_t> pp =
      reader.readInt(*degrees, "degrees", "pp", /*positive=*/true);
  if (!dp || !tp || !pp)
    return std::nullopt;
  plan.dp = *dp;
  plan.tp = *tp;
  plan.pp = *pp;

  std::optional<int64_t> microBatches =
      reader.readInt(*root, "", "micro_batches", /*positive=*/true);
  std::optional<bool> recompute = reader.readBool(*root, "", "recompute");
  if (!microBatches || !recompute)
    return std::nullopt;
  plan.microBatches = *microBatches;
  plan.recompute = *recompute;

  const llvm::json::Array *stages = reader.readArray(*root, "", "stages");
  if (!stages)
    return std::nullopt;
  if (stages->empty()) {
    reader.fail("stages", "expected at least one stage");
    return std::nullopt;
  }
  int64_t nextLayer = 0;
  for (size_t i = 0; i < stages->size(); ++i) {
    StagePlan stage;
    if (!readStage(reader, (*stages)[i], i, nextLayer, stage))
      return std::nullopt;
    nextLayer = stage.lastLayer + 1;
    plan.stages.push_back(stage);
  }

  plan.layerStage.assign(static_cast<size_t>(nextLayer), 0);
  for (size_t i = 0; i < plan.stages.size(); ++i)
    for (int64_t layer = plan.stages[i].firstLayer;
         layer <= plan.stages[i].lastLayer; ++layer)
      plan.layerStage[layer] = static_cast<int64_t>(i);
  return plan;
}

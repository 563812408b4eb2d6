//===- SemaTrain.cpp - hyper-parameters and the train block ---*- C++ -*-===//
//
// Part of the elaborator; see SemaImpl.h.
//
//===----------------------------------------------------------------------===//

#include "frontend/SemaImpl.h"

using namespace tgc;

namespace tgc::sema {

//===----------------------------------------------------------------------===//
// Hyper-parameters and the train block
//===----------------------------------------------------------------------===//

void Sema::evalHypers(const ModelDecl &m) {
  std::vector<std::string> names;
  for (const HyperDecl &h : m.hypers)
    names.push_back(h.name);
  std::map<std::string, std::string> overrides;
  for (const auto &d : opts.defines) {
    if (std::find(names.begin(), names.end(), d.first) == names.end()) {
      diag.error({}, withSuggestion("unknown hyper-parameter '" + d.first +
                                        "' in -D " + d.first + "=" + d.second +
                                        " (model '" + m.name + "' has: " +
                                        llvm::join(names, ", ") + ")",
                                    d.first, names));
      continue;
    }
    overrides[d.first] = d.second;
  }
  Frame empty;
  frame = &empty;
  for (const HyperDecl &h : m.hypers) {
    if (hypers.count(h.name)) {
      diag.error(h.loc, "hyper-parameter '" + h.name + "' is declared twice");
      continue;
    }
    Value v = eval(*h.value);
    if (!v.isError() && v.kind != Value::Int && v.kind != Value::Float &&
        v.kind != Value::Bool) {
      diag.error(h.value->loc, "hyper-parameter '" + h.name +
                                   "' must be a number, got " + describe(v));
      v = Value::error();
    }
    auto o = overrides.find(h.name);
    if (o != overrides.end() && !v.isError()) {
      const std::string &text = o->second;
      const char *begin = text.c_str();
      char *end = nullptr;
      errno = 0;
      long long iv = std::strtoll(begin, &end, 10);
      bool isInt = !text.empty() && *end == '\0' && errno == 0;
      errno = 0;
      double fv = std::strtod(begin, &end);
      bool isNum = !text.empty() && *end == '\0' && errno == 0 && std::isfinite(fv);
      if (v.kind == Value::Int && isInt) {
        v = Value::ofInt(iv);
      } else if (v.kind == Value::Float && isNum) {
        v = Value::ofFloat(fv);
      } else if (v.kind == Value::Bool && (text == "true" || text == "false")) {
        v = Value::ofBool(text == "true");
      } else {
        diag.error(h.loc, "-D " + h.name + "=" + text + ": hyper-parameter '" +
                              h.name + "' is " +
                              (v.kind == Value::Int    ? "an integer"
                               : v.kind == Value::Bool ? "true or false"
                                                       : "a number") +
                              ", and '" + text + "' is not");
        v = Value::error();
      }
    }
    hypers[h.name] = v;
    if (v.kind == Value::Int)
      b->setHyper(h.name, ConfigValue::ofInt(v.i));
    else if (v.kind == Value::Float)
      b->setHyper(h.name, ConfigValue::ofFloat(v.f));
    else if (v.kind == Value::Bool)
      b->setHyper(h.name, ConfigValue::ofBool(v.i));
  }
  frame = nullptr;
}

bool Sema::trainCall(const Expr &e, const std::string &key,
                     const std::vector<std::string> &kinds, ConfigValue &out) {
  if (e.kind != Expr::Name && e.kind != Expr::Call)
    return diag.error(e.loc, key + " must be one of " + llvm::join(kinds, ", ") +
                                 ", optionally with arguments");
  if (std::find(kinds.begin(), kinds.end(), e.text) == kinds.end())
    return diag.error(e.loc, withSuggestion("unknown " + key + " '" + e.text +
                                                "' (choose " +
                                                llvm::join(kinds, ", ") + ")",
                                            e.text, kinds));
  // Settings of each kind with their defaults: (name, default, min, max).
  struct Setting {
    const char *name;
    double dflt;
    double lo, hi;
    bool isInt;
  };
  std::vector<Setting> settings;
  const std::string &k = e.text;
  const double inf = std::numeric_limits<double>::infinity();
  if (key == "optimizer") {
    settings.push_back({"lr", k == "sgd" || k == "momentum" ? 0.01 : 1e-3, 0, inf, false});
    if (k == "momentum") {
      settings.push_back({"momentum", 0.9, 0, 1, false});
      settings.push_back({"nesterov", 0, 0, 1, true});
    }
    if (k == "adam" || k == "adamw") {
      settings.push_back({"beta1", 0.9, 0, 1, false});
      settings.push_back({"beta2", 0.999, 0, 1, false});
      settings.push_back({"eps", 1e-8, 0, inf, false});
    }
    settings.push_back({"weight_decay", k == "adamw" ? 0.01 : 0.0, 0, inf, false});
  } else if (key == "loss_scale") {
    // PyTorch's GradScaler defaults; ranges are checked below.
    settings.push_back({"init", 65536.0, 0, inf, false});
    settings.push_back({"growth", 2.0, 1, inf, false});
    settings.push_back({"backoff", 0.5, 0, 1, false});
    settings.push_back({"interval", 2000, 1, inf, true});
  } else if (k == "warmup") {
    settings.push_back({"steps", -1, 1, inf, true});
  } else if (k == "cosine") {
    settings.push_back({"steps", -1, 1, inf, true});
    settings.push_back({"warmup", 0, 0, inf, true});
    settings.push_back({"min_lr", 0, 0, inf, false});
  }
  std::vector<Formal> formals;
  for (const Setting &s : settings)
    formals.push_back({s.name, s.dflt < 0});
  Args args;
  if (e.kind == Expr::Call) {
    if (!bindArgs(e, formals, args))
      return false;
  } else {
    args.values.assign(formals.size(), Value());
    args.locs.assign(formals.size(), e.loc);
    for (const Formal &f : formals)
      if (f.required)
        return diag.error(e.loc, key + " '" + k + "' needs '" + f.name +
                                     "', as in " + k + "(" + f.name + "=1000)");
  }
  out = ConfigValue::ofDict();
  out.dict.emplace_back("kind", ConfigValue::ofString(k));
  bool ok = true;
  for (size_t i = 0; i < settings.size(); ++i) {
    const Setting &s = settings[i];
    double v = s.dflt;
    if (args.has(i)) {
      const Value &val = args.values[i];
      if (s.isInt && s.hi == 1 && val.kind == Value::Bool) {
        v = static_cast<double>(val.i);
      } else if (!wantFloat(val, args.locs[i], std::string("'") + s.name + "'", v)) {
        ok = false;
        continue;
      }
      bool inRange = s.hi == 1 && !s.isInt ? (v >= s.lo && v < s.hi)
                                            : (v >= s.lo && v <= s.hi);
      std::string name = s.name;
      bool positive = name == "lr" || name == "eps" || name == "init";
      if (positive)
        inRange = v > 0 && std::isfinite(v);
      // The scale is an f32 state tensor.
      if (name == "init")
        inRange = v > 0 && v <= std::numeric_limits<float>::max();
      // A loss scale must shrink on overflow and grow after a run of
      // finite steps: backoff in (0, 1), growth above 1.
      if (key == "loss_scale" && name == "backoff")
        inRange = v > 0 && v < 1;
      if (key == "loss_scale" && name == "growth")
        inRange = v > 1 && v <= std::numeric_limits<float>::max();
      if (!inRange || (s.isInt && v != std::floor(v))) {
        std::string range = name == "init" ? "positive and at most 3.4e38"
                            : positive ? "positive"
                            : key == "loss_scale" && name == "backoff"
                                ? "in (0, 1)"
                            : key == "loss_scale" && name == "growth"
                                ? "greater than 1"
                            : s.hi == 1 && !s.isInt ? "in [0, 1)"
                            : s.isInt ? "a non-negative integer"
                                      : "non-negative";
        if (s.isInt && s.lo == 1)
          range = "a positive integer";
        ok = diag.error(args.locs[i], key + " " + k + ": '" + s.name + "' must be " +
                                          range + ", got " + fmtNum(v));
        continue;
      }
    }
    if (s.isInt && s.hi == 1)
      out.dict.emplace_back(s.name, ConfigValue::ofBool(v != 0));
    else if (s.isInt)
      out.dict.emplace_back(s.name, ConfigValue::ofInt(static_cast<int64_t>(v)));
    else
      out.dict.emplace_back(s.name, ConfigValue::ofFloat(v));
  }
  if (ok && k == "cosine") {
    int64_t steps = out.dict[1].second.i, warm = out.dict[2].second.i;
    if (warm >= steps)
      ok = diag.error(e.loc, "schedule cosine: warmup (" + std::to_string(warm) +
                                 ") must be shorter than steps (" +
                                 std::to_string(steps) + ")");
  }
  return ok;
}

bool Sema::evalKeepFp32(const Expr &e, ConfigValue &out) {
  if (e.kind != Expr::List)
    return diag.error(e.loc, "keep_fp32 must be a list of call-site names, "
                             "patterns or op kinds, as in "
                             "[ln_f, \"h.*.ln_*\", softmax]");
  // Patterns are checked against the ops the model built; after an error in
  // the model that set is incomplete, and a miss would be a phantom error.
  bool check = !diag.hasErrors();
  out = ConfigValue::ofList();
  bool ok = true;
  for (const ExprPtr &p : e.args) {
    if (p->kind != Expr::Name && p->kind != Expr::String) {
      ok = diag.error(p->loc, "keep_fp32: each entry is a name (ln_f), a "
                              "quoted pattern (\"h.*.ln_*\") or an op kind "
                              "(softmax)");
      continue;
    }
    const std::string &pat = p->text;
    if (check && !b->keepFp32Selects(pat)) {
      std::vector<std::string> names = b->callPaths();
      ok = diag.error(p->loc,
                      withSuggestion("keep_fp32: '" + pat +
                                         "' matches no call-site name or op "
                                         "kind of the model" +
                                         (names.empty()
                                              ? std::string(" (it has no def "
                                                            "calls)")
                                              : ""),
                                     pat, names));
      continue;
    }
    out.list.push_back(ConfigValue::ofString(pat));
  }
  return ok;
}

void Sema::evalTrain(const TrainDecl &tr) {
  static const std::vector<std::string> keys = {
      "optimizer", "schedule", "batch", "accumulate",
      "precision", "memory_budget", "clip_grad_norm", "loss_scale",
      "keep_fp32"};
  ConfigDict dict;
  std::set<std::string> seen;
  std::string precision = "fp32";
  const Expr *lossScale = nullptr;
  const Expr *keepFp32 = nullptr;
  Frame empty;
  frame = &empty;
  for (const TrainEntry &en : tr.entries) {
    if (std::find(keys.begin(), keys.end(), en.key) == keys.end()) {
      diag.error(en.loc, withSuggestion("unknown train setting '" + en.key + "'",
                                        en.key, keys));
      continue;
    }
    if (!seen.insert(en.key).second) {
      diag.error(en.loc, "train setting '" + en.key + "' is given twice");
      continue;
    }
    const Expr &e = *en.value;
    ConfigValue cv;
    if (en.key == "optimizer") {
      if (!trainCall(e, "optimizer", {"sgd", "momentum", "adam", "adamw"}, cv))
        continue;
    } else if (en.key == "schedule") {
      if (!trainCall(e, "schedule", {"constant", "warmup", "cosine"}, cv))
        continue;
    } else if (en.key == "loss_scale") {
      lossScale = &e;
      if (!trainCall(e, "loss_scale", {"dynamic"}, cv))
        continue;
    } else if (en.key == "keep_fp32") {
      keepFp32 = &e;
      if (!evalKeepFp32(e, cv))
        continue;
    } else if (en.key == "precision") {
      static const std::vector<std::string> precs = {"fp32", "bf16", "fp16"};
      std::string p = e.kind == Expr::Name || e.kind == Expr::String ? e.text : "";
      if (std::find(precs.begin(), precs.end(), p) == precs.end()) {
        diag.error(e.loc, withSuggestion("precision must be fp32, bf16 or fp16, got '" +
                                             (p.empty() ? std::string("?") : p) + "'",
                                         p, precs));
        continue;
      }
      precision = p;
      cv = ConfigValue::ofString(p);
    } else if (en.key == "clip_grad_norm") {
      double v;
      if (!wantFloat(eval(e), e.loc, "clip_grad_norm", v))
        continue;
      if (!(v > 0) || !std::isfinite(v)) {
        diag.error(e.loc, "clip_grad_norm must be positive, got " + fmtNum(v));
        continue;
      }
      cv = ConfigValue::ofFloat(v);
    } else {
      // batch, accumulate, memory_budget: positive integers.
      int64_t v;
      if (!wantInt(eval(e), e.loc, en.key, v))
        continue;
      if (v <= 0) {
        diag.error(e.loc, en.key + " must be positive, got " + std::to_string(v));
        continue;
      }
      cv = ConfigValue::ofInt(v);
    }
    dict.emplace_back(en.key, std::move(cv));
  }
  // fp16 always scales (with GradScaler's defaults unless loss_scale says
  // otherwise); bf16 and fp32 have fp32's exponent range and need none.
  if (lossScale && precision != "fp16")
    diag.error(lossScale->loc, "loss_scale applies to precision = fp16 only "
                               "(this block's precision is " +
                                   precision + ")");
  if (keepFp32 && precision == "fp32")
    diag.error(keepFp32->loc, "keep_fp32 applies to precision = bf16 or fp16 "
                              "(this block's precision is fp32)");
  frame = nullptr;
  b->setTrain(std::move(dict));
}


} // namespace tgc::sema

// Compares zerfoo's logits on one GGUF file with the reference's (llama.cpp's) as family_recorder
// recorded them for the same file: the same tokens fed one at a time through the public C API
// (zf_session_eval), per position the cosine of the mean-centred logits over the recorder's
// sampled ids (as tests/family/family_test.cpp measures), the relative difference of the logits'
// standard deviation and top-1 agreement; with the recorder's RAW.f32 also the cosine of the
// mean-centred logits over the whole vocabulary and the largest absolute logit difference.
// Prints one line "FILE load=ok cos=... " (or "FILE load=FAIL <status>: <message>"). Built and run
// by check_quantized_families.sh; not part of zerfoo's build or test run.
//
//   quant_compare MODEL.gguf GOLDEN.json [RAW.f32] [--per-pos] [--prefill N]
// --prefill N: the first N tokens in one zf_session_eval call (zerfoo's batched prompt path), then
// one at a time; compared from position N-1 on (with the recorder's FAMILY_RECORDER_GREEDY steps,
// as a greedy generation).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "zerfoo.h"

int main(int argc, char** argv) {
  bool per_pos = false;
  size_t prefill = 1;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--per-pos") == 0) per_pos = true;
    else if (std::strcmp(argv[i], "--prefill") == 0 && i + 1 < argc) prefill = std::max(1, std::atoi(argv[++i]));
    else args.push_back(argv[i]);
  }
  if (args.size() != 2 && args.size() != 3) {
    std::fprintf(stderr, "usage: %s MODEL.gguf GOLDEN.json [RAW.f32] [--per-pos] [--prefill N]\n", argv[0]);
    return 2;
  }
  const std::string path = args[0];
  const std::string file = path.substr(path.find_last_of('/') + 1);
  std::ifstream in(args[1]);
  const nlohmann::json g = nlohmann::json::parse(in);
  if (g.value("reference_refused", false)) {
    std::printf("%s ref=REFUSED\n", file.c_str());
  }
  zf_set_log_level(ZF_LOG_ERROR);
  zf_model_params mp;
  zf_model_params_init(&mp, sizeof mp);
  zf_model* m = nullptr;
  const zf_status st = zf_model_load(path.c_str(), &mp, &m);
  if (st != ZF_OK) {
    std::printf("%s load=FAIL %s: %s\n", file.c_str(), zf_status_string(st), zf_last_error());
    return 1;
  }
  if (g.value("reference_refused", false)) {
    std::printf("%s load=ok (nothing to compare)\n", file.c_str());
    return 0;
  }
  zf_model_summary info{};
  info.struct_size = sizeof info;
  zf_model_info(m, &info);
  const int n_vocab = g["n_vocab"].get<int>();
  if (info.n_vocab != n_vocab) {
    std::printf("%s load=ok n_vocab %d vs reference %d\n", file.c_str(), int(info.n_vocab), n_vocab);
    return 1;
  }
  const std::vector<int32_t> tokens = g["tokens"].get<std::vector<int32_t>>();
  std::vector<float> raw;
  if (args.size() == 3) {
    raw.resize(tokens.size() * size_t(n_vocab));
    std::FILE* f = std::fopen(args[2].c_str(), "rb");
    if (!f || std::fread(raw.data(), sizeof(float), raw.size(), f) != raw.size()) {
      std::fprintf(stderr, "%s: cannot read %zu logits\n", args[2].c_str(), raw.size());
      return 2;
    }
    std::fclose(f);
  }
  zf_session_params sp;
  zf_session_params_init(&sp, sizeof sp);
  sp.n_ctx = g["n_ctx"].get<int>();
  zf_session* s = nullptr;
  if (zf_session_create(m, &sp, &s) != ZF_OK) {
    std::printf("%s load=ok session=FAIL %s\n", file.c_str(), zf_last_error());
    return 1;
  }
  const std::vector<int> sample = g["sample_ids"].get<std::vector<int>>();
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  double worst_cos = 1, worst_full = 1, worst_std = 0, max_abs = 0, sum_cos = 0;
  size_t worst_pos = 0, worst_full_pos = 0, agree = 0, exact_top1 = 0;
  size_t compared = 0;
  prefill = std::min(prefill, tokens.size());
  for (size_t p = prefill - 1; p < tokens.size(); ++p) {
    const size_t first = p == prefill - 1 ? 0 : p;  // the prefill's tokens in one call
    if (zf_session_eval(s, &tokens[first], p + 1 - first, logits.data(), logits.size()) != ZF_OK) {
      std::printf("%s load=ok eval=FAIL pos %zu: %s\n", file.c_str(), p, zf_last_error());
      return 1;
    }
    const nlohmann::json& ref = g["positions"][p];
    double sum = 0, sq = 0;
    for (float v : logits) sum += v;
    const double mean = sum / n_vocab;
    for (float v : logits) sq += (v - mean) * (v - mean);
    const double sd = std::sqrt(sq / n_vocab), ref_std = ref["std"].get<double>();
    worst_std = std::max(worst_std, std::fabs(sd - ref_std) / ref_std);
    const std::vector<double> z = ref["sample_z"].get<std::vector<double>>();
    double za = 0, ua = 0;
    for (size_t i = 0; i < sample.size(); ++i) { za += z[i]; ua += logits[size_t(sample[i])]; }
    za /= double(sample.size());
    ua /= double(sample.size());
    double dot = 0, nz = 0, nu = 0;
    for (size_t i = 0; i < sample.size(); ++i) {
      const double a = z[i] - za, b = logits[size_t(sample[i])] - ua;
      dot += a * b; nz += a * a; nu += b * b;
    }
    const double cosine = dot / std::sqrt(nz * nu);
    sum_cos += cosine;
    if (cosine < worst_cos) { worst_cos = cosine; worst_pos = p; }
    double full = std::nan(""), pos_abs = 0;
    if (!raw.empty()) {
      const float* r = raw.data() + p * size_t(n_vocab);
      double rm = 0;
      for (int i = 0; i < n_vocab; ++i) rm += r[i];
      rm /= n_vocab;
      double d2 = 0, a2 = 0, b2 = 0;
      for (int i = 0; i < n_vocab; ++i) {
        const double a = r[i] - rm, b = logits[size_t(i)] - mean;
        d2 += a * b; a2 += a * a; b2 += b * b;
        pos_abs = std::max(pos_abs, double(std::fabs(r[i] - logits[size_t(i)])));
      }
      full = d2 / std::sqrt(a2 * b2);
      max_abs = std::max(max_abs, pos_abs);
      if (full < worst_full) { worst_full = full; worst_full_pos = p; }
    }
    const int ours = int(std::max_element(logits.begin(), logits.end()) - logits.begin());
    const std::vector<int> top_ids = ref["top_ids"].get<std::vector<int>>();
    const std::vector<double> top_logits = ref["top_logits"].get<std::vector<double>>();
    bool ok = ours == top_ids[0];
    exact_top1 += ok;
    if (!ok) {  // a near-tie (within 0.1 x std in the reference's logits) counts as agreeing
      auto it = std::find(top_ids.begin(), top_ids.end(), ours);
      ok = it != top_ids.end() && top_logits[0] - top_logits[size_t(it - top_ids.begin())] <= 0.1 * ref_std;
    }
    agree += ok;
    ++compared;
    if (per_pos) {
      std::printf("  pos %2zu cos %.6f full %.6f maxabs %.4f std %.4f/%.4f top1 %d/%d\n", p, cosine, full, pos_abs,
                  sd, ref_std, ours, top_ids[0]);
    }
  }
  std::printf("%s load=ok cos_min=%.6f@%zu cos_mean=%.6f", file.c_str(), worst_cos, worst_pos,
              sum_cos / double(compared));
  if (!raw.empty()) std::printf(" full_cos_min=%.6f@%zu max_abs=%.4f", worst_full, worst_full_pos, max_abs);
  std::printf(" std_diff=%.2f%% top1=%zu/%zu exact_top1=%zu\n", 100 * worst_std, agree, compared, exact_top1);
  zf_session_free(s);
  zf_model_free(m);
  return 0;
}

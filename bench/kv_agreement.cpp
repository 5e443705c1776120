// Quantized KV cache against F16 (issue #45 §1, doc/kv_cache.md): on real text, the mean KL
// divergence of the next-token distributions and the top-1 agreement of each KV type against an
// F16 session, computed as llama-perplexity --kl-divergence does (chunks of --ctx tokens, BOS
// first when the model adds one, the second half of each chunk scored); and decode speed at a
// depth. Uses the C API only.
//   kv_agreement MODEL TEXT [--ctx 512] [--chunks 8] [--threads 1] [--types q8_0,q4_0]
//   kv_agreement MODEL --speed DEPTH [--gen 64] [--threads 2] [--types f16,q8_0,q4_0]
// Build: c++ -O2 -std=c++17 -Iinclude bench/kv_agreement.cpp -Lbuild-test -lzerfoo
//        -Wl,-rpath,$PWD/build-test -o build-test/kv_agreement
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "zerfoo.h"

namespace {

void Check(zf_status st, const char* what) {
  if (st != ZF_OK) {
    std::fprintf(stderr, "%s: %s\n", what, zf_last_error());
    std::exit(1);
  }
}

int32_t KvType(const std::string& s) {
  if (s == "f32") return ZF_KV_F32;
  if (s == "f16") return ZF_KV_F16;
  if (s == "q8_0") return ZF_KV_Q8_0;
  if (s == "q4_0") return ZF_KV_Q4_0;
  std::fprintf(stderr, "unknown type '%s'\n", s.c_str());
  std::exit(2);
}

zf_session* Session(zf_model* m, int32_t type, int32_t n_ctx, int32_t threads) {
  zf_session_params p;
  zf_session_params_init(&p, sizeof p);
  p.n_ctx = n_ctx;
  p.n_threads = threads;
  p.kv_type = type;
  zf_session* s = nullptr;
  Check(zf_session_create(m, &p, &s), "zf_session_create");
  return s;
}

std::vector<int32_t> Tokenize(zf_model* m, const std::string& text, uint32_t flags) {
  size_t n = 0;
  zf_tokenize(m, text.data(), text.size(), flags, nullptr, 0, &n);
  std::vector<int32_t> t(n);
  Check(zf_tokenize(m, text.data(), text.size(), flags, t.data(), t.size(), &n), "zf_tokenize");
  t.resize(n);
  return t;
}

// log softmax in double.
void LogSoftmax(const float* x, size_t n, std::vector<double>* out) {
  double mx = -INFINITY;
  for (size_t i = 0; i < n; ++i) mx = std::max(mx, double(x[i]));
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += std::exp(double(x[i]) - mx);
  const double lse = mx + std::log(sum);
  out->resize(n);
  for (size_t i = 0; i < n; ++i) (*out)[i] = double(x[i]) - lse;
}

size_t Argmax(const float* x, size_t n) {
  size_t b = 0;
  for (size_t i = 1; i < n; ++i) if (x[i] > x[b]) b = i;
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL TEXT [--ctx N] [--chunks N] [--threads N] [--types a,b] | MODEL --speed DEPTH\n", argv[0]);
    return 2;
  }
  const std::string model_path = argv[1];
  int32_t ctx = 512, chunks = 8, threads = 1, depth = -1, gen = 64;
  std::string text_path, types_arg;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--ctx") ctx = std::atoi(next().c_str());
    else if (a == "--chunks") chunks = std::atoi(next().c_str());
    else if (a == "--threads") threads = std::atoi(next().c_str());
    else if (a == "--types") types_arg = next();
    else if (a == "--speed") depth = std::atoi(next().c_str());
    else if (a == "--gen") gen = std::atoi(next().c_str());
    else text_path = a;
  }
  std::vector<std::string> types;
  std::stringstream ts(types_arg.empty() ? (depth >= 0 ? "f16,q8_0,q4_0" : "q8_0,q4_0") : types_arg);
  for (std::string t; std::getline(ts, t, ',');) types.push_back(t);

  zf_model_params mp;
  zf_model_params_init(&mp, sizeof mp);
  mp.n_threads = threads;
  mp.prefix_cache_mib = -1;
  zf_model* m = nullptr;
  Check(zf_model_load(model_path.c_str(), &mp, &m), "zf_model_load");
  zf_model_summary info;
  info.struct_size = sizeof info;
  Check(zf_model_info(m, &info), "zf_model_info");
  const size_t nv = size_t(info.n_vocab);

  if (depth >= 0) {  // decode tok/s after `depth` prompt tokens, per type
    for (const std::string& t : types) {
      zf_session* s = Session(m, KvType(t), depth + gen + 1, threads);
      std::vector<int32_t> prompt(static_cast<size_t>(depth));
      for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t(100 + (i * 7919) % (nv - 200));
      std::vector<float> l(nv);
      if (depth > 0) Check(zf_session_eval(s, prompt.data(), prompt.size(), l.data(), nv), "eval prompt");
      const auto t0 = std::chrono::steady_clock::now();
      for (int32_t g = 0; g < gen; ++g) {
        const int32_t tok = int32_t(100 + (size_t(g) * 104729) % (nv - 200));
        Check(zf_session_eval(s, &tok, 1, l.data(), nv), "eval");
      }
      const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("%s depth %d: decode %.1f tok/s (%d tokens, %d threads)\n", t.c_str(), depth, gen / sec, gen, threads);
      zf_session_free(s);
    }
    zf_model_free(m);
    return 0;
  }

  std::ifstream f(text_path);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  const std::vector<int32_t> with = Tokenize(m, text, ZF_TOKENIZE_ADD_SPECIAL), plain = Tokenize(m, text, 0);
  const bool bos = with.size() > plain.size() && with[0] != plain[0];
  if (int64_t(with.size()) < int64_t(ctx) * chunks) chunks = int32_t(with.size() / size_t(ctx));
  std::printf("%s: %zu tokens, %d chunks of %d (BOS %s), scoring positions %d..%d of each\n", model_path.c_str(),
              with.size(), chunks, ctx, bos ? "yes" : "no", ctx / 2, ctx - 2);
  const int32_t first = ctx / 2;
  struct Acc {
    double kl = 0, kl2 = 0, nll = 0;
    int64_t same = 0, n = 0;
  };
  std::vector<Acc> acc(types.size());
  double base_nll = 0;
  std::vector<double> lp_base, lp;
  std::vector<float> lb(nv);
  std::vector<std::vector<float>> lq(types.size(), std::vector<float>(nv));
  for (int32_t c = 0; c < chunks; ++c) {
    std::vector<int32_t> tok(with.begin() + int64_t(c) * ctx, with.begin() + int64_t(c + 1) * ctx);
    if (bos) tok[0] = with[0];
    zf_session* base = Session(m, ZF_KV_F16, ctx, threads);
    std::vector<zf_session*> qs;
    for (const std::string& t : types) qs.push_back(Session(m, KvType(t), ctx, threads));
    for (int32_t j = first; j < ctx - 1; ++j) {
      // Logits at position j (predicting token j + 1): the prefix in one call, then one at a time
      // (exact prefill: the same bits as one token at a time).
      const int32_t* p = j == first ? tok.data() : tok.data() + j;
      const size_t n = j == first ? size_t(first) + 1 : 1;
      Check(zf_session_eval(base, p, n, lb.data(), nv), "eval f16");
      LogSoftmax(lb.data(), nv, &lp_base);
      base_nll -= lp_base[size_t(tok[size_t(j) + 1])];
      const size_t top = Argmax(lb.data(), nv);
      for (size_t k = 0; k < qs.size(); ++k) {
        Check(zf_session_eval(qs[k], p, n, lq[k].data(), nv), "eval");
        LogSoftmax(lq[k].data(), nv, &lp);
        double kl = 0.0;
        for (size_t i = 0; i < nv; ++i) kl += std::exp(lp_base[i]) * (lp_base[i] - lp[i]);
        acc[k].kl += kl;
        acc[k].kl2 += kl * kl;
        acc[k].nll -= lp[size_t(tok[size_t(j) + 1])];
        acc[k].same += Argmax(lq[k].data(), nv) == top;
        acc[k].n += 1;
      }
    }
    zf_session_free(base);
    for (zf_session* s : qs) zf_session_free(s);
  }
  const double n = double(acc.empty() ? 1 : acc[0].n);
  std::printf("f16 PPL %.4f over %.0f scored tokens\n", std::exp(base_nll / n), n);
  for (size_t k = 0; k < types.size(); ++k) {
    const double mean = acc[k].kl / n, var = acc[k].kl2 / n - mean * mean;
    std::printf("%s: PPL %.4f, mean KLD %.6f +- %.6f, same top-1 %.2f%%\n", types[k].c_str(), std::exp(acc[k].nll / n),
                mean, std::sqrt(std::max(0.0, var) / n), 100.0 * double(acc[k].same) / n);
  }
  zf_model_free(m);
  return 0;
}

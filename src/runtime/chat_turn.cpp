#include "runtime/chat_turn.h"

#include <algorithm>

#include "chat/format.h"
#include "chat/parser.h"
#include "chat/tool_grammar.h"
#include "common/utf8.h"
#include "jinja/jinja.h"
#include "runtime/chat_request.h"
#include "tokenizer/tokenizer.h"

namespace zf::rt {

using Json = nlohmann::ordered_json;

namespace {

double MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// The output constraint of a turn: the caller's (generate options or response_format), else
// the tool-choice policy's: "required" (or a named function) constrains from the first token
// to the template's own call format, each call's arguments valid for its tool; "auto" arms the
// same grammar lazily when the model writes the format's opening text, and only when nothing
// else constrains the output (an auto grammar that does not compile leaves the output free).
Status PickConstraint(const ServedModel& sm, const ChatRequest& req, const chat::ChatFormat& format,
                      GenerateOptions* g, std::unique_ptr<Constraint>* compiled) {
  std::string field = "the generate options' constraint";
  if (req.format_kind != ConstraintKind::kNone) {
    if (g->constraint_kind != ConstraintKind::kNone) {
      return InvalidArgument("request.response_format and the generate options' constraint both constrain the output; give one");
    }
    g->constraint_kind = req.format_kind;
    g->constraint = req.format_constraint;
    field = "request.response_format";
  }
  bool lazy_auto = false;
  if (req.parse_tools && req.require_call && g->constraint_kind != ConstraintKind::kNone) {
    return InvalidArgument("request.tool_choice: \"required\" and a structured output both constrain the output; give one");
  }
  if (req.parse_tools && (req.require_call || g->constraint_kind == ConstraintKind::kNone)) {
    const chat::ToolGrammar tg = chat::ToolCallGrammar(format, req.tools, req.parallel,
                                                       sm.chat().ControlTokensIn(chat::MarkerTexts(format)));
    if (req.require_call) {
      g->constraint_kind = ConstraintKind::kLark;
      g->constraint = tg.grammar;
      field = "request.tools";
    } else if (!tg.trigger.empty()) {
      g->constraint_kind = ConstraintKind::kLark;
      g->constraint = tg.lazy_grammar;
      g->constraint_trigger = tg.trigger;
      lazy_auto = true;
    }
  }
  if (g->constraint_kind == ConstraintKind::kNone) return Status::Ok();
  Status s = Constraint::Create(sm.constraint_vocab(), g->constraint_kind, g->constraint, compiled);
  if (s.ok() || s.code() == Code::kUnsupported) return s;
  if (lazy_auto) {  // auto stays free rather than failing
    g->constraint_kind = ConstraintKind::kNone;
    g->constraint.clear(), g->constraint_trigger.clear();
    return Status::Ok();
  }
  if (field == "request.tools") return InvalidArgument("request.tools: the parameters cannot be enforced: " + s.message());
  return Status(s.code(), field + ": " + s.message());
}

size_t CommonPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

// What a turn is made of before anything is evaluated: the request, the template, its format
// and the rendered prompt.
struct Prepared {
  ChatRequest req;
  std::string tmpl;
  std::shared_ptr<const chat::ChatFormat> format;
  std::string prompt;
};

// The final assistant message continued (as the reference does): the conversation before it,
// the generation prompt up to the reasoning marker, the message's reasoning (closed when its
// content is continued) and its content; the model goes on from there, and the parser reads the
// new text from where the message stopped (inside the reasoning, or in the content).
Status ContinueFinal(const ServedModel& sm, const std::string& tmpl, RenderInput& in, Prepared* p) {
  const ChatRequest& req = p->req;
  std::string base;
  in.add_generation_prompt = false;
  ZF_RETURN_IF_ERROR(sm.chat().Render(tmpl, in, &base));
  // p->prompt is the rendering with the generation prompt; what it adds is the generation prompt.
  std::string gen = p->prompt.compare(0, base.size(), base) == 0 ? p->prompt.substr(base.size()) : std::string();
  if (gen.empty()) base = p->prompt;
  const chat::ReasoningFormat& rf = p->format->reasoning;
  const bool reasoning = req.continue_final == ChatRequest::Continue::kReasoning;
  if (!rf.open.empty()) {
    gen = gen.substr(0, gen.find(rf.open)) + rf.open + req.continue_reasoning;
    if (!reasoning) gen += rf.close;
  }
  if (!reasoning) gen += req.continue_content;
  p->prompt = base + gen;
  // What the parser starts in: the open reasoning, or the content after it.
  auto format = std::make_shared<chat::ChatFormat>(*p->format);
  format->reasoning.forced_open = reasoning && !rf.open.empty();
  format->reasoning.prompt_closed = !reasoning && !rf.open.empty();
  p->format = std::move(format);
  return Status::Ok();
}

Status Prepare(const ServedModel& sm, const TurnOptions& o, Prepared* p) {
  ZF_RETURN_IF_ERROR(ParseChatRequest(o.request_json, &p->req));
  const ChatRequest& req = p->req;
  if (!o.generate.constraint_trigger.empty()) {
    return InvalidArgument("the generate options' constraint_trigger is set: a turn decides its own triggers");
  }
  ZF_RETURN_IF_ERROR(sm.chat().Pick(o.template_name, o.template_text, &p->tmpl));
  if (req.tools.is_array()) {
    if (std::string e = chat::CheckToolParameters(req.tools, "request.tools"); !e.empty()) return InvalidArgument(e);
  }
  try {
    p->format = sm.chat().Format(p->tmpl, req.extra_json);
    RenderInput in;
    in.messages = jinja::FromJson(req.messages.dump());
    in.may_normalize = req.may_normalize;
    if (req.tools.is_array()) in.tools = jinja::FromJson(req.tools.dump());
    if (req.documents.is_array()) in.documents = jinja::FromJson(req.documents.dump());
    in.extra_json = req.extra_json;
    in.add_generation_prompt = true;
    in.now = o.now;
    ZF_RETURN_IF_ERROR(sm.chat().Render(p->tmpl, in, &p->prompt));
    if (req.continue_final != ChatRequest::Continue::kNone) ZF_RETURN_IF_ERROR(ContinueFinal(sm, p->tmpl, in, p));
  } catch (const jinja::Error& e) {  // nesting limits while building the variables
    return InvalidArgument(std::string("request: ") + e.what());
  }
  if (!req.images.empty() && o.images == nullptr) {
    return InvalidArgument(req.images[0].field + (req.images[0].audio ? ": an input_audio part needs the model's audio projector "
                                                                       : ": an image part needs the model's vision projector ") +
                           "(zf_turn_params.mmproj); none was given");
  }
  for (const ChatRequest::Image& part : req.images) {
    if (o.images != nullptr && part.audio && !o.images->embed_audio) {
      return InvalidArgument(part.field + ": an input_audio part needs an audio projector; this one encodes images");
    }
  }
  // The request is valid UTF-8, so the template wrote these bytes: the prompt is refused here,
  // as the tokenizer refuses it in Begin(), so that zf_chat_turn_prompt fails as the turn does.
  size_t bad = 0;
  if (!IsValidUtf8(p->prompt, &bad)) {
    return Status(Code::kInvalidUtf8, "the rendered prompt is not valid UTF-8 (byte offset " + std::to_string(bad) +
                                          "; the template wrote it)");
  }
  return Status::Ok();
}

// A run of the prompt: tokens[start, start + n) are text, or (rows != nullptr) an image's rows,
// whose entries are Session::EmbeddingToken of the rows' hash.
struct PromptRun {
  size_t start = 0, n = 0;
  std::shared_ptr<const std::vector<float>> rows;
  int32_t cols = 0;  // the rows' grid as the session takes it (EvalEmbeddings)
  bool bidirectional = false;  // an image's rows as the projector places them; audio: causal
};

// The rendered prompt in runs: text tokenized piece by piece between the images (BOS on the
// first, special-token text as tokens, as libmtmd tokenizes its text chunks), each image as its
// pieces: marker tokens, and runs of rows (one per tile: each its own entries' hash).
Status PromptRuns(const ServedModel& sm, const Prepared& prep, const TurnImages* images, std::vector<PromptRun>* runs,
                  std::vector<int32_t>* tokens) {
  const tok::Tokenizer& tk = sm.model().tokenizer();
  const std::vector<ChatRequest::Image>& parts = prep.req.images;
  if (parts.empty()) {
    ZF_RETURN_IF_ERROR(tk.Encode(prep.prompt, true, true, tokens));
    runs->push_back(PromptRun{0, tokens->size(), nullptr});
    return Status::Ok();
  }
  const std::string& marker = prep.req.image_marker;
  std::vector<std::string_view> pieces;
  for (size_t at = 0;;) {
    const size_t m = prep.prompt.find(marker, at);
    pieces.push_back(std::string_view(prep.prompt).substr(at, m == std::string::npos ? std::string::npos : m - at));
    if (m == std::string::npos) break;
    at = m + marker.size();
  }
  if (pieces.size() != parts.size() + 1) {
    return InvalidArgument("request.messages: the template placed " + std::to_string(pieces.size() - 1) + " of " +
                           std::to_string(parts.size()) + " images (a message's text may spell out the image marker '" +
                           marker + "', or the template dropped a message)");
  }
  const size_t E = size_t(sm.model().desc().n_embd_inp());  // an image row (deepstack slices too)
  std::vector<int32_t> piece;
  // Text is appended to the current text run, or starts one.
  const auto add_text = [&](const std::vector<int32_t>& t) {
    if (t.empty()) return;
    if (runs->empty() || runs->back().rows != nullptr) runs->push_back(PromptRun{tokens->size(), 0, nullptr});
    tokens->insert(tokens->end(), t.begin(), t.end());
    runs->back().n += t.size();
  };
  for (size_t i = 0; i < pieces.size(); ++i) {
    ZF_RETURN_IF_ERROR(tk.Encode(pieces[i], i == 0, true, &piece));
    add_text(piece);
    if (i == parts.size()) break;
    std::shared_ptr<const std::vector<float>> rows;
    std::vector<ImagePiece> layout;
    ZF_RETURN_IF_ERROR((parts[i].audio ? images->embed_audio : images->embed)(parts[i].bytes, parts[i].field, &rows, &layout));
    if (rows == nullptr || rows->empty() || rows->size() % E != 0) {
      return Status(Code::kInternal, parts[i].field + ": the projector returned rows of another width");
    }
    size_t row = 0;
    for (const ImagePiece& lp : layout) {
      if (lp.rows == 0) {
        ZF_RETURN_IF_ERROR(tk.Encode(lp.text, false, true, &piece));
        add_text(piece);
        continue;
      }
      if ((row + lp.rows) * E > rows->size()) return Status(Code::kInternal, parts[i].field + ": fewer rows than the layout");
      // A tile of a larger image: its own rows (the session hashes each run's rows).
      std::shared_ptr<const std::vector<float>> run =
          lp.rows * E == rows->size() ? rows
                                      : std::make_shared<const std::vector<float>>(rows->begin() + std::ptrdiff_t(row * E),
                                                                                    rows->begin() + std::ptrdiff_t((row + lp.rows) * E));
      // The grid is part of the rows' key only where it places them (M-RoPE), as in the session.
      const int32_t cols = sm.model().desc().mrope() ? lp.cols : 0;
      // Audio rows attend causally (libmtmd's mtmd_decode_use_non_causal: audio chunks never
      // both ways), also on a handle whose images do (Gemma 4's two towers).
      const bool both_ways = images->bidirectional && !parts[i].audio;
      const uint64_t hash = Session::RowsKey(run->data(), run->size(), both_ways, cols);
      runs->push_back(PromptRun{tokens->size(), lp.rows, run, cols, both_ways});
      for (size_t j = 0; j < lp.rows; ++j) tokens->push_back(Session::EmbeddingToken(hash, j));
      row += lp.rows;
    }
    if (row * E != rows->size()) return Status(Code::kInternal, parts[i].field + ": more rows than the layout");
  }
  return Status::Ok();
}

}  // namespace

Status RenderTurnPrompt(const ServedModel& model, const TurnOptions& options, std::string* prompt) {
  Prepared p;
  ZF_RETURN_IF_ERROR(Prepare(model, options, &p));
  *prompt = std::move(p.prompt);
  if (p.req.images.empty()) return Status::Ok();
  // Each image as the marker text among its rows (the rows themselves have no text).
  const std::string& marker = p.req.image_marker;
  size_t at = prompt->find(marker);
  for (size_t i = 0; i < p.req.images.size() && at != std::string::npos; ++i) {
    std::vector<ImagePiece> layout;
    const ChatRequest::Image& part = p.req.images[i];
    ZF_RETURN_IF_ERROR((part.audio ? options.images->layout_audio : options.images->layout)(part.bytes, part.field, &layout));
    std::string text;
    for (const ImagePiece& lp : layout) text += lp.text;
    prompt->replace(at, marker.size(), text);
    at = prompt->find(marker, at + text.size());
  }
  return Status::Ok();
}

Status ChatTurn::Begin(const ServedModel& sm, Session& session, const TurnOptions& o, std::unique_ptr<ChatTurn>* out) {
  out->reset();
  const auto t0 = std::chrono::steady_clock::now();
  Prepared prep;
  ZF_RETURN_IF_ERROR(Prepare(sm, o, &prep));
  const ChatRequest& req = prep.req;
  std::unique_ptr<ChatTurn> t(new ChatTurn());
  t->start_ = t0;
  GenerateOptions g = o.generate;
  std::unique_ptr<Constraint> compiled;
  ZF_RETURN_IF_ERROR(PickConstraint(sm, req, *prep.format, &g, &compiled));
  chat::ReadOptions ro;
  ro.parse_tools = req.parse_tools;
  ro.max_calls = req.parallel ? SIZE_MAX : 1;
  ro.split_reasoning = req.split_reasoning;
  t->parser_.reset(new chat::StreamParser(*prep.format, req.parse_tools ? req.tools : Json(), ro));

  // The prompt as `zerfoo generate` tokenizes it (BOS per the model, special-token text as
  // tokens), so a turn's greedy output equals the CLI's on the rendered text; with images, in
  // runs of text and image rows (PromptRuns).
  std::vector<PromptRun> runs;
  std::vector<int32_t> tokens;
  ZF_RETURN_IF_ERROR(PromptRuns(sm, prep, o.images, &runs, &tokens));
  if (tokens.empty()) return InvalidArgument("request.messages: the rendered prompt is empty");
  if (int64_t(tokens.size()) + 1 > session.n_ctx()) {
    return Status(Code::kContextFull, "the prompt has " + std::to_string(tokens.size()) +
                                          " tokens; the session's context is " + std::to_string(session.n_ctx()));
  }
  // What the session holds of the prompt stays; at least one token is evaluated (its logits
  // start the generation). An image's entries match only the same image's (its rows' hash), so
  // a kept part of an image was computed with the whole image and the rest of it continues it
  // exactly. The prefix cache supplies what it has of the rest.
  const size_t keep = std::min(CommonPrefix(session.Conversation(), tokens), tokens.size() - 1);
  ZF_RETURN_IF_ERROR(session.Truncate(keep));
  const int64_t cached_before = session.cached_tokens();
  for (size_t i = 0; i < runs.size(); ++i) {
    const PromptRun& r = runs[i];
    const bool last = i + 1 == runs.size();
    if (r.start + r.n <= keep) continue;
    if (r.rows != nullptr) {
      const size_t from = keep > r.start ? keep - r.start : 0;
      ZF_RETURN_IF_ERROR(session.EvalEmbeddings(r.rows->data(), r.n, r.bidirectional, last, from, r.cols));
      continue;
    }
    const size_t from = std::max(keep, r.start);
    const int32_t* p = tokens.data() + from;
    const size_t n = r.start + r.n - from;
    ZF_RETURN_IF_ERROR(last ? session.EvalKeepLogits(p, n) : session.Eval(p, n, nullptr));
  }
  t->usage_.n_prompt = int32_t(tokens.size());
  t->usage_.n_cached = int32_t(keep + size_t(session.cached_tokens() - cached_before));

  g.compiled_constraint = compiled ? &compiled : nullptr;
  ZF_RETURN_IF_ERROR(Generation::Begin(session, std::string_view(), g, &t->gen_));
  t->usage_.prompt_ms = MsSince(t0);
  t->session_ = &session;
  t->want_logprobs_ = g.n_logprobs > 0;
  *out = std::move(t);
  return Status::Ok();
}

void ChatTurn::Queue(std::vector<chat::Delta>& deltas) {
  for (chat::Delta& d : deltas) {
    TurnEvent e;
    switch (d.kind) {
      case chat::Delta::kContent: e.kind = TurnEvent::kContent; break;
      case chat::Delta::kReasoning: e.kind = TurnEvent::kReasoning; break;
      case chat::Delta::kToolCall: e.kind = TurnEvent::kToolCall; break;
      case chat::Delta::kToolArgs: e.kind = TurnEvent::kToolArgs; break;
    }
    e.text = std::move(d.text);
    if (d.kind == chat::Delta::kToolCall || d.kind == chat::Delta::kToolArgs) e.index = int32_t(d.index);
    e.id = std::move(d.id);
    e.name = std::move(d.name);
    if (!logprobs_.empty()) {
      e.logprobs.swap(logprobs_);
      e.logprob_stride = session_->logprob_stride();
    }
    queue_.push_back(std::move(e));
  }
  deltas.clear();
}

void ChatTurn::QueueDone() {
  const GenerateResult& r = gen_->result();
  TurnEvent e;
  e.kind = TurnEvent::kDone;
  e.stop = r.stop_reason;
  const bool cut = r.stop_reason == StopReason::kMaxTokens || r.stop_reason == StopReason::kContextFull;
  e.finish = cut ? FinishReason::kLength
                 : !parser_->message().tool_calls.empty() ? FinishReason::kToolCalls : FinishReason::kStop;
  usage_.n_generated = r.n_generated;
  usage_.n_drafted = r.n_drafted;
  usage_.n_accepted = r.n_accepted;
  usage_.decode_ms = r.decode_ms;
  e.usage = usage_;
  if (!logprobs_.empty()) {
    e.logprobs.swap(logprobs_);
    e.logprob_stride = session_->logprob_stride();
  }
  queue_.push_back(std::move(e));
}

Status ChatTurn::Next(TurnEvent* event) {
  std::vector<chat::Delta> deltas;
  while (queue_.empty()) {
    if (finished_) {
      *event = last_;
      return Status::Ok();
    }
    std::string piece;
    int32_t token = -1;
    bool end = false;
    Status s = gen_->done() ? Status::Ok() : gen_->Next(&piece, &token, &end);
    if (!s.ok()) {
      finished_ = done_ = true;
      last_.kind = TurnEvent::kDone;
      return s;
    }
    if (gen_->done() || end) {
      parser_->Finish(&deltas);
      Queue(deltas);
      QueueDone();
      finished_ = true;
      break;
    }
    if (want_logprobs_) {
      const std::vector<TokenLogprob>& lp = session_->piece_logprobs();
      logprobs_.insert(logprobs_.end(), lp.begin(), lp.end());
    }
    parser_->Push(piece, &deltas);
    if (deltas.empty() && !logprobs_.empty()) {  // text held back: its tokens' logprobs alone
      TurnEvent e;
      e.kind = TurnEvent::kLogprobs;
      e.logprobs.swap(logprobs_);
      e.logprob_stride = session_->logprob_stride();
      queue_.push_back(std::move(e));
    }
    Queue(deltas);
  }
  *event = std::move(queue_.front());
  queue_.pop_front();
  if (event->kind == TurnEvent::kDone) {
    done_ = true;
    last_ = *event;
  }
  return Status::Ok();
}

void ChatTurn::Stop() {
  if (gen_ != nullptr) gen_->Stop();
}

Json ChatTurn::Message() const { return chat::ToOpenAiMessage(parser_->message()); }

}  // namespace zf::rt

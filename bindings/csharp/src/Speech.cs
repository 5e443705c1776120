using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;

namespace Zerfoo
{
    /// <summary>What <see cref="SpeechModel.Info"/> reports.</summary>
    public sealed class SpeechInfo
    {
        /// <summary>Vocabulary size.</summary>
        public int VocabSize { get; internal set; }
        /// <summary>Log-mel bins (80, or 128 for large-v3).</summary>
        public int MelCount { get; internal set; }
        /// <summary>Encoder blocks.</summary>
        public int AudioLayers { get; internal set; }
        /// <summary>Decoder blocks.</summary>
        public int TextLayers { get; internal set; }
        /// <summary>Encoder width.</summary>
        public int AudioState { get; internal set; }
        /// <summary>Multilingual (language detection, translation) rather than English-only.</summary>
        public bool Multilingual { get; internal set; }
    }

    /// <summary>Options of <see cref="SpeechModel.Transcribe"/>. The defaults are whisper.cpp's
    /// whisper_full_default_params(GREEDY): English, timestamps, greedy, the temperature fallback in
    /// 0.2 steps with best of 5.</summary>
    public sealed class TranscribeOptions
    {
        /// <summary>Worker threads; 0 = the hardware's (at most 8).</summary>
        public int Threads { get; set; }
        /// <summary>A Whisper language code ("en", "de", ...), "auto" (multilingual models), or null ("en").</summary>
        public string Language { get; set; }
        /// <summary>Translate into English (multilingual models).</summary>
        public bool Translate { get; set; }
        /// <summary>Decode without timestamps (one segment per 30 s window).</summary>
        public bool NoTimestamps { get; set; }
        /// <summary>Initial prompt: text the first window continues from (null: none).</summary>
        public string Prompt { get; set; }
        /// <summary>Keep the prompt in front of every window's prompt.</summary>
        public bool CarryPrompt { get; set; }
        /// <summary>Token start/end times and <see cref="Segment.Words"/>.</summary>
        public bool WordTimestamps { get; set; }
        /// <summary>Do not offer the previous window's text as the next one's prompt.</summary>
        public bool NoContext { get; set; }
        /// <summary>First temperature in [0, 1]; 0: greedy or beam search.</summary>
        public float Temperature { get; set; }
        /// <summary>Fallback step (null: 0.2; 0: no fallback).</summary>
        public float? TemperatureInc { get; set; }
        /// <summary>Beam search with this many beams when above 1 (at most 8); whisper-cli uses 5.</summary>
        public int BeamSize { get; set; }
        /// <summary>Sequences sampled above temperature 0 (null: 5).</summary>
        public int? BestOf { get; set; }
        /// <summary>Sequence j samples from std::mt19937(Seed + j): the same seed, the same transcript.</summary>
        public uint Seed { get; set; }
        /// <summary>null: whisper.cpp's -1 (the score is the average log-probability).</summary>
        public float? LengthPenalty { get; set; }
        /// <summary>null: 2.4.</summary>
        public float? EntropyThold { get; set; }
        /// <summary>null: -1.</summary>
        public float? LogprobThold { get; set; }
        /// <summary>null: 0.6.</summary>
        public float? NoSpeechThold { get; set; }
    }

    /// <summary>A word: a segment's text tokens joined at a leading space.</summary>
    public sealed class Word
    {
        /// <summary>With its leading space.</summary>
        public string Text { get; internal set; }
        /// <summary>Start in milliseconds.</summary>
        public long StartMs { get; internal set; }
        /// <summary>End in milliseconds.</summary>
        public long EndMs { get; internal set; }
        /// <summary>The lowest probability among its tokens.</summary>
        public float P { get; internal set; }
    }

    /// <summary>One decoded token of a segment.</summary>
    public struct SpeechToken
    {
        /// <summary>Token id (<see cref="SpeechModel.TokenText"/> gives its text).</summary>
        public int Id;
        /// <summary>The probability the decoder gave it.</summary>
        public float P;
        /// <summary>Its log-probability.</summary>
        public float PLog;
        /// <summary>Start in milliseconds with <see cref="TranscribeOptions.WordTimestamps"/>; else 0.</summary>
        public long StartMs;
        /// <summary>End in milliseconds with <see cref="TranscribeOptions.WordTimestamps"/>; else 0.</summary>
        public long EndMs;
    }

    /// <summary>A transcribed segment: the text between two timestamps.</summary>
    public sealed class Segment
    {
        /// <summary>Start in milliseconds from the start of the audio.</summary>
        public long StartMs { get; internal set; }
        /// <summary>End in milliseconds.</summary>
        public long EndMs { get; internal set; }
        /// <summary>The text (usually starting with a space).</summary>
        public string Text { get; internal set; }
        /// <summary>Its tokens (text and timestamps).</summary>
        public SpeechToken[] Tokens { get; internal set; }
        /// <summary>Probability of no speech at the window's first step.</summary>
        public float NoSpeechProb { get; internal set; }
        /// <summary>With <see cref="TranscribeOptions.WordTimestamps"/>: the words; else empty.</summary>
        public Word[] Words { get; internal set; }
        /// <summary>The temperature the window was decoded at (above the first: a fallback).</summary>
        public float Temperature { get; internal set; }
        /// <summary>Average log-probability of the window's tokens.</summary>
        public float AvgLogprob { get; internal set; }
    }

    /// <summary>The result of <see cref="SpeechModel.Transcribe"/>.</summary>
    public sealed class Transcription
    {
        /// <summary>The segments, in order.</summary>
        public Segment[] Segments { get; internal set; }
        /// <summary>The whole text.</summary>
        public string Text { get; internal set; }
        /// <summary>The language decoded with (the detected one for "auto").</summary>
        public string Language { get; internal set; }
        /// <summary>The detected language's probability ("auto"); 0 when the language was given.</summary>
        public float LanguageProb { get; internal set; }
    }

    /// <summary>A Whisper model loaded from a whisper.cpp ggml .bin file (zf_speech_load).
    /// Immutable: any number of threads may transcribe with it at once.</summary>
    public sealed class SpeechModel : IDisposable
    {
        readonly SpeechHandle handle;

        SpeechModel(SpeechHandle h) { handle = h; }

        /// <summary>Loads a whisper.cpp ggml .bin model.</summary>
        /// <exception cref="ZerfooException">IO; Format (a GGUF or malformed file: the message names
        /// the problem); Unsupported.</exception>
        public static SpeechModel Load(string path)
        {
            if (path == null) throw new ArgumentNullException("path");
            Library.EnsureLoaded();  // before LoadNative is compiled: Mono binds DllImports then
            return LoadNative(path);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static SpeechModel LoadNative(string path)
        {
            IntPtr raw;
            ZerfooException.Check(NativeMethods.zf_speech_load(Library.Utf8Z(path), 0, out raw),
                                  "zf_speech_load(\"" + path + "\")");
            return new SpeechModel(SpeechHandle.FromNative(raw));
        }

        /// <summary>Releases the model.</summary>
        public void Dispose() { handle.Dispose(); }

        /// <summary>Vocabulary, mel bins, layers, whether it is multilingual.</summary>
        public SpeechInfo Info()
        {
            var s = new zf_speech_summary { struct_size = (uint)Marshal.SizeOf(typeof(zf_speech_summary)) };
            ZerfooException.Check(NativeMethods.zf_speech_info(handle, ref s), "zf_speech_info");
            return new SpeechInfo
            {
                VocabSize = s.n_vocab, MelCount = s.n_mels, AudioLayers = s.n_audio_layer,
                TextLayers = s.n_text_layer, AudioState = s.n_audio_state, Multilingual = s.multilingual != 0,
            };
        }

        delegate int Fill(byte[] buf, UIntPtr cap, out UIntPtr needed);

        static string Fetch(Fill f, string what)
        {
            byte[] buf = new byte[256];
            for (;;)
            {
                UIntPtr needed;
                int st = f(buf, (UIntPtr)buf.Length, out needed);
                if (st == (int)Status.BufferTooSmall) { buf = new byte[(int)needed]; continue; }
                ZerfooException.Check(st, what);
                return Encoding.UTF8.GetString(buf, 0, (int)needed - 1);
            }
        }

        /// <summary>The text of a token ("" for special and timestamp tokens).</summary>
        public string TokenText(int id)
        {
            return Fetch((byte[] b, UIntPtr c, out UIntPtr n) => NativeMethods.zf_speech_token_text(handle, id, b, c, out n),
                         "zf_speech_token_text");
        }

        /// <summary>Decodes a WAV file's bytes into 16 kHz mono PCM (integer 8/16/24/32-bit or
        /// float 32/64-bit, any channels and rate).</summary>
        /// <exception cref="ZerfooException">InvalidArgument naming what is wrong with the file.</exception>
        public static float[] DecodeWav(byte[] data)
        {
            if (data == null) throw new ArgumentNullException("data");
            Library.EnsureLoaded();
            return DecodeWavNative(data);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static float[] DecodeWavNative(byte[] data)
        {
            UIntPtr n;
            int st = NativeMethods.zf_wav_decode(data, (UIntPtr)data.Length, null, UIntPtr.Zero, out n);
            if (st != (int)Status.BufferTooSmall)
            {
                ZerfooException.Check(st, "zf_wav_decode");
                return new float[0];
            }
            var pcm = new float[(int)n];
            ZerfooException.Check(NativeMethods.zf_wav_decode(data, (UIntPtr)data.Length, pcm, (UIntPtr)pcm.Length, out n),
                                  "zf_wav_decode");
            return pcm;
        }

        sealed class SegmentSink
        {
            internal Func<Segment, bool> OnSegment;
            internal Exception Error;
        }

        // One delegate for every transcription (it lives as long as the process); the state
        // travels in user_data as a GCHandle.
        static readonly zf_segment_cb SegmentDelegate = SegmentTrampoline;

        [MonoPInvokeCallback(typeof(zf_segment_cb))]
        static int SegmentTrampoline(IntPtr userData, IntPtr segment)
        {
            var sink = (SegmentSink)GCHandle.FromIntPtr(userData).Target;
            try
            {
                var s = (zf_speech_segment)Marshal.PtrToStructure(segment, typeof(zf_speech_segment));
                return sink.OnSegment(ToSegment(s)) ? 0 : 1;
            }
            catch (Exception e)
            {
                sink.Error = e;  // never unwind into native code; rethrown after zf_transcribe
                return 1;
            }
        }

        static unsafe Segment ToSegment(zf_speech_segment s)
        {
            int n = (int)s.n_tokens;
            var tokens = new SpeechToken[n];
            var raw = (zf_speech_token*)s.tokens;
            var times = (zf_speech_token_time*)s.token_times;
            for (int i = 0; i < n; ++i)
            {
                tokens[i] = new SpeechToken { Id = raw[i].id, P = raw[i].p, PLog = raw[i].plog };
                if (times != null) { tokens[i].StartMs = times[i].t0_ms; tokens[i].EndMs = times[i].t1_ms; }
            }
            var words = new Word[s.words == IntPtr.Zero ? 0 : (int)s.n_words];
            var rawWords = (zf_speech_word*)s.words;
            for (int i = 0; i < words.Length; ++i)
                words[i] = new Word
                {
                    Text = Encoding.UTF8.GetString((byte*)rawWords[i].text, (int)rawWords[i].text_len),
                    StartMs = rawWords[i].t0_ms, EndMs = rawWords[i].t1_ms, P = rawWords[i].p,
                };
            return new Segment
            {
                StartMs = s.t0_ms, EndMs = s.t1_ms, NoSpeechProb = s.no_speech_prob, Tokens = tokens, Words = words,
                Temperature = s.temperature, AvgLogprob = s.avg_logprob,
                Text = s.text == IntPtr.Zero ? "" : Encoding.UTF8.GetString((byte*)s.text, (int)s.text_len),
            };
        }

        /// <summary>Transcribes 16 kHz mono PCM (see <see cref="DecodeWav"/>) with timestamps, as
        /// whisper.cpp's whisper_full does (greedy or beam search, the temperature fallback). <paramref name="onSegment"/> (optional) sees each
        /// segment as soon as it is decoded; false stops early (the result then holds the segments
        /// so far).</summary>
        /// <exception cref="ZerfooException">InvalidArgument (empty PCM, a language Whisper does not
        /// know or the model cannot decode, translate on an English-only model).</exception>
        public Transcription Transcribe(float[] pcm, TranscribeOptions options = null, Func<Segment, bool> onSegment = null)
        {
            if (pcm == null) throw new ArgumentNullException("pcm");
            options = options ?? new TranscribeOptions();
            var p = new zf_transcribe_params();
            NativeMethods.zf_transcribe_params_init(ref p, (UIntPtr)Marshal.SizeOf(typeof(zf_transcribe_params)));
            p.n_threads = options.Threads;
            p.flags = (options.Translate ? 1u : 0u) | (options.NoTimestamps ? 2u : 0u) |
                      (options.WordTimestamps ? 4u : 0u) | (options.CarryPrompt ? 8u : 0u);
            if (options.NoContext) p.n_max_text_ctx = 0;
            p.temperature = options.Temperature;
            p.temperature_inc = options.TemperatureInc ?? p.temperature_inc;
            p.beam_size = options.BeamSize;
            p.best_of = options.BestOf ?? p.best_of;
            p.seed = options.Seed;
            p.length_penalty = options.LengthPenalty ?? p.length_penalty;
            p.entropy_thold = options.EntropyThold ?? p.entropy_thold;
            p.logprob_thold = options.LogprobThold ?? p.logprob_thold;
            p.no_speech_thold = options.NoSpeechThold ?? p.no_speech_thold;
            IntPtr lang = options.Language == null ? IntPtr.Zero : Library.AllocUtf8Z(options.Language);
            IntPtr prompt = options.Prompt == null ? IntPtr.Zero : Library.AllocUtf8Z(options.Prompt);
            var sink = new SegmentSink { OnSegment = onSegment };
            GCHandle gch = GCHandle.Alloc(sink);
            IntPtr result = IntPtr.Zero;
            try
            {
                p.language = lang;
                p.initial_prompt = prompt;
                int st = NativeMethods.zf_transcribe(handle, pcm, (UIntPtr)pcm.Length, ref p,
                                                     onSegment == null ? null : SegmentDelegate,
                                                     GCHandle.ToIntPtr(gch), out result);
                if (sink.Error != null) throw sink.Error;
                ZerfooException.Check(st, "zf_transcribe");
                int n = (int)NativeMethods.zf_transcription_n_segments(result);
                var segments = new List<Segment>(n);
                for (int i = 0; i < n; ++i)
                {
                    var s = new zf_speech_segment { struct_size = (uint)Marshal.SizeOf(typeof(zf_speech_segment)) };
                    ZerfooException.Check(NativeMethods.zf_transcription_segment(result, (UIntPtr)i, ref s),
                                          "zf_transcription_segment");
                    segments.Add(ToSegment(s));
                }
                IntPtr r = result;
                float langProb;
                ZerfooException.Check(NativeMethods.zf_transcription_language_prob(r, out langProb),
                                      "zf_transcription_language_prob");
                return new Transcription
                {
                    Segments = segments.ToArray(),
                    Text = Fetch((byte[] b, UIntPtr c, out UIntPtr x) => NativeMethods.zf_transcription_text(r, b, c, out x),
                                 "zf_transcription_text"),
                    Language = Fetch((byte[] b, UIntPtr c, out UIntPtr x) => NativeMethods.zf_transcription_language(r, b, c, out x),
                                     "zf_transcription_language"),
                    LanguageProb = langProb,
                };
            }
            finally
            {
                if (result != IntPtr.Zero) NativeMethods.zf_transcription_free(result);
                gch.Free();
                if (lang != IntPtr.Zero) Marshal.FreeHGlobal(lang);
                if (prompt != IntPtr.Zero) Marshal.FreeHGlobal(prompt);
                GC.KeepAlive(pcm);
            }
        }
    }
}

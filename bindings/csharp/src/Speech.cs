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

    /// <summary>Options of <see cref="SpeechModel.Transcribe"/>.</summary>
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
            for (int i = 0; i < n; ++i) tokens[i] = new SpeechToken { Id = raw[i].id, P = raw[i].p, PLog = raw[i].plog };
            return new Segment
            {
                StartMs = s.t0_ms, EndMs = s.t1_ms, NoSpeechProb = s.no_speech_prob, Tokens = tokens,
                Text = s.text == IntPtr.Zero ? "" : Encoding.UTF8.GetString((byte*)s.text, (int)s.text_len),
            };
        }

        /// <summary>Transcribes 16 kHz mono PCM (see <see cref="DecodeWav"/>) greedily with
        /// timestamps, as whisper.cpp does. <paramref name="onSegment"/> (optional) sees each
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
            p.flags = (options.Translate ? 1u : 0u) | (options.NoTimestamps ? 2u : 0u);
            IntPtr lang = options.Language == null ? IntPtr.Zero : Library.AllocUtf8Z(options.Language);
            var sink = new SegmentSink { OnSegment = onSegment };
            GCHandle gch = GCHandle.Alloc(sink);
            IntPtr result = IntPtr.Zero;
            try
            {
                p.language = lang;
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
                return new Transcription
                {
                    Segments = segments.ToArray(),
                    Text = Fetch((byte[] b, UIntPtr c, out UIntPtr x) => NativeMethods.zf_transcription_text(r, b, c, out x),
                                 "zf_transcription_text"),
                    Language = Fetch((byte[] b, UIntPtr c, out UIntPtr x) => NativeMethods.zf_transcription_language(r, b, c, out x),
                                     "zf_transcription_language"),
                };
            }
            finally
            {
                if (result != IntPtr.Zero) NativeMethods.zf_transcription_free(result);
                gch.Free();
                if (lang != IntPtr.Zero) Marshal.FreeHGlobal(lang);
                GC.KeepAlive(pcm);
            }
        }
    }
}

using System;
using System.Runtime.InteropServices;

namespace Zerfoo
{
    /// <summary>What <see cref="Mmproj.Info"/> reports.</summary>
    public sealed class MmprojInfo
    {
        /// <summary>clip.projector_type, e.g. "gemma3".</summary>
        public string ProjectorType { get; internal set; }
        /// <summary>The encoder's square input side in pixels.</summary>
        public int ImageSize { get; internal set; }
        /// <summary>Pixels per patch side.</summary>
        public int PatchSize { get; internal set; }
        /// <summary>Embeddings per image.</summary>
        public int TokenCount { get; internal set; }
        /// <summary>Width of each embedding (the model's).</summary>
        public int EmbeddingWidth { get; internal set; }
        /// <summary>The vision encoder's own width.</summary>
        public int VisionWidth { get; internal set; }
        /// <summary>Vision encoder blocks.</summary>
        public int Layers { get; internal set; }
        /// <summary>What it encodes: <see cref="Modality.Image"/> and/or <see cref="Modality.Audio"/>.</summary>
        public Modality Modalities { get; internal set; }
        /// <summary>An audio projector's PCM rate (16000); 0 for a vision projector.</summary>
        public int SampleRate { get; internal set; }
    }

    /// <summary>The inputs a projector encodes (zf_mmproj_summary.modalities).</summary>
    [Flags]
    public enum Modality
    {
        /// <summary>Images: EmbedImage, Session.EvalImage, image_url parts.</summary>
        Image = 1,
        /// <summary>Audio: EmbedAudio, Session.EvalAudio, input_audio parts.</summary>
        Audio = 2,
    }

    /// <summary>An encoder's embeddings as the model takes them in its prompt:
    /// <see cref="TokenCount"/> rows of <see cref="Width"/> floats, row-major in
    /// <see cref="Data"/>.</summary>
    public abstract class MediaEmbedding
    {
        internal MediaEmbedding() { }
        /// <summary>Rows (positions in the prompt).</summary>
        public int TokenCount { get; internal set; }
        /// <summary>Floats per row.</summary>
        public int Width { get; internal set; }
        /// <summary>TokenCount * Width floats.</summary>
        public float[] Data { get; internal set; }

        // Checks that an encoder's output divides into its rows.
        internal static T FromRows<T>(float[] output, int tokens) where T : MediaEmbedding, new()
        {
            if (tokens <= 0 || output.Length % tokens != 0)
                throw new InvalidOperationException(output.Length + " floats for " + tokens + " tokens");
            return new T { TokenCount = tokens, Width = output.Length / tokens, Data = output };
        }
    }

    /// <summary>An image's embeddings.</summary>
    public sealed class ImageEmbedding : MediaEmbedding { }

    /// <summary>An audio clip's embeddings (<see cref="Mmproj.EmbedAudio"/>).</summary>
    public sealed class AudioEmbedding : MediaEmbedding { }

    /// <summary>A projector (llama.cpp's mmproj GGUF) loaded for a model (zf_mmproj_load): a
    /// vision projector turns images, an audio projector audio clips (<see cref="MmprojInfo.Modalities"/>)
    /// into the embeddings the model takes in its prompt. Immutable: any number of
    /// threads may embed with it at once. It keeps its model alive, so Dispose may come in any
    /// order.</summary>
    public sealed class Mmproj : IDisposable
    {
        /// <summary>The largest image it takes, in pixels (width x height): 8192 x 8192.</summary>
        public const long MaxPixels = 8192L * 8192L;

        readonly MmprojHandle handle;

        Mmproj(MmprojHandle h, string path)
        {
            handle = h;
            Path = path;
            var s = new zf_mmproj_summary { struct_size = (uint)Marshal.SizeOf(typeof(zf_mmproj_summary)) };
            ZerfooException.Check(NativeMethods.zf_mmproj_info(h, ref s), "zf_mmproj_info");
            Info = new MmprojInfo
            {
                ProjectorType = s.projector_type == IntPtr.Zero ? "" : Library.Utf8(s.projector_type),
                ImageSize = s.image_size,
                PatchSize = s.patch_size,
                TokenCount = s.n_tokens,
                EmbeddingWidth = s.n_embd,
                VisionWidth = s.n_embd_vision,
                Layers = s.n_layer,
                Modalities = (Modality)s.modalities,
                SampleRate = s.sample_rate,
            };
        }

        /// <summary>Loads the projector at <paramref name="path"/> for <paramref name="model"/>.</summary>
        /// <exception cref="ZerfooException">IO, Format (a malformed file: the key or tensor named),
        /// InvalidArgument (another model's projector: its width and type against the model's),
        /// Unsupported (a projector type not loaded yet).</exception>
        public static Mmproj Load(Model model, string path)
        {
            if (model == null) throw new ArgumentNullException("model");
            if (path == null) throw new ArgumentNullException("path");
            ModelHandle mh = model.Handle;
            bool added = false;
            try
            {
                mh.DangerousAddRef(ref added);  // throws ObjectDisposedException if disposed
                IntPtr raw;
                ZerfooException.Check(NativeMethods.zf_mmproj_load(mh, Library.Utf8Z(path), 0, out raw),
                                      "zf_mmproj_load(\"" + path + "\")");
                MmprojHandle h = MmprojHandle.FromNative(raw);
                try
                {
                    return new Mmproj(h, path);
                }
                catch
                {
                    h.Dispose();
                    throw;
                }
            }
            finally
            {
                if (added) mh.DangerousRelease();
            }
        }

        /// <summary>The projector file.</summary>
        public string Path { get; private set; }

        /// <summary>Type, input geometry and widths.</summary>
        public MmprojInfo Info { get; private set; }

        /// <summary>The embeddings of an image file's bytes (JPEG, PNG, GIF's first frame, BMP) on
        /// <paramref name="threads"/> workers (0: the machine's cores, at most 8).</summary>
        /// <exception cref="ZerfooException">Format (corrupt or truncated bytes), InvalidArgument
        /// (WebP, an unknown container, more than <see cref="MaxPixels"/>).</exception>
        public ImageEmbedding EmbedImage(byte[] data, int threads = 0)
        {
            if (data == null) throw new ArgumentNullException("data");
            return Embed(data, 0u, 0u, 0u, threads);
        }

        /// <summary>The embeddings of raw pixels: <paramref name="height"/> rows of
        /// <paramref name="width"/> pixels, R G B bytes each.</summary>
        public ImageEmbedding EmbedRgb(byte[] rgb, int width, int height, int threads = 0)
        {
            if (rgb == null) throw new ArgumentNullException("rgb");
            if (width < 0) throw new ArgumentOutOfRangeException("width");
            if (height < 0) throw new ArgumentOutOfRangeException("height");
            return Embed(rgb, 1u, (uint)width, (uint)height, threads);
        }

        internal MmprojHandle Handle { get { return handle; } }

        // A zf_image over pinned bytes (format 0: encoded, 1: RGB8).
        internal static zf_image RawImage(byte[] data, GCHandle pin, uint format, uint width, uint height)
        {
            return new zf_image
            {
                struct_size = (uint)Marshal.SizeOf(typeof(zf_image)),
                format = format,
                data = data.Length == 0 ? IntPtr.Zero : pin.AddrOfPinnedObject(),
                size = (UIntPtr)(ulong)data.Length,
                width = width,
                height = height,
            };
        }

        ImageEmbedding Embed(byte[] data, uint format, uint width, uint height, int threads)
        {
            GCHandle pin = GCHandle.Alloc(data, GCHandleType.Pinned);
            try
            {
                var im = RawImage(data, pin, format, width, height);
                // The size first (the image is decoded, not encoded), then the embeddings.
                UIntPtr needed;
                int tokens;
                int st = NativeMethods.zf_image_embed(handle, ref im, threads, null, UIntPtr.Zero, out needed, out tokens);
                if (st != 6 /* ZF_ERR_BUFFER_TOO_SMALL */) ZerfooException.Check(st, "zf_image_embed");
                var output = new float[(long)(ulong)needed];
                ZerfooException.Check(NativeMethods.zf_image_embed(handle, ref im, threads, output, needed, out needed, out tokens),
                                      "zf_image_embed");
                return MediaEmbedding.FromRows<ImageEmbedding>(output, tokens);
            }
            finally
            {
                pin.Free();
            }
        }

        /// <summary>The embeddings of an audio clip: 16 kHz mono samples, nominally in [-1, 1]
        /// (<see cref="SpeechModel.DecodeWav"/> reads WAV files), on <paramref name="threads"/>
        /// workers (0: the machine's cores, at most 8). Ultravox and voxtral give 375 rows per
        /// started 30 s, qwen2a 750.</summary>
        /// <exception cref="ZerfooException">InvalidArgument: an image projector, fewer than
        /// <see cref="Audio.MinSamples"/> or more than <see cref="Audio.MaxSamples"/> samples, a NaN
        /// or infinite sample (its index named).</exception>
        public unsafe AudioEmbedding EmbedAudio(float[] pcm, int threads = 0)
        {
            if (pcm == null) throw new ArgumentNullException("pcm");
            // An empty clip still passes a valid pointer: the library then names the sample count.
            fixed (float* p = pcm.Length == 0 ? new float[1] : pcm)
            {
                var n = (UIntPtr)pcm.Length;
                // The size first (known from the length alone), then the embeddings.
                UIntPtr needed;
                int tokens;
                int st = NativeMethods.zf_audio_embed(handle, p, n, threads, null, UIntPtr.Zero, out needed, out tokens);
                if (st != (int)Status.BufferTooSmall) ZerfooException.Check(st, "zf_audio_embed");
                var output = new float[(long)(ulong)needed];
                ZerfooException.Check(NativeMethods.zf_audio_embed(handle, p, n, threads, output, needed, out needed, out tokens),
                                      "zf_audio_embed");
                return MediaEmbedding.FromRows<AudioEmbedding>(output, tokens);
            }
        }

        /// <summary>Releases the projector (and its hold on the model).</summary>
        public void Dispose() { handle.Dispose(); }
    }
}

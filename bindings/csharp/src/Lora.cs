using System;
using System.Threading;

namespace Zerfoo
{
    /// <summary>What <see cref="LoraAdapter.Info"/> reports.</summary>
    public sealed class LoraInfo
    {
        /// <summary>The largest rank of its pairs.</summary>
        public int Rank { get; internal set; }
        /// <summary>adapter.lora.alpha (0 when the file has none).</summary>
        public float Alpha { get; internal set; }
        /// <summary>Adapted weights (lora_a/lora_b pairs).</summary>
        public int WeightCount { get; internal set; }
    }

    /// <summary>A LoRA adapter loaded against a model (zf_lora_load): a GGUF file as llama.cpp's
    /// convert_lora_to_gguf.py writes it. Immutable: any number of sessions and threads may apply
    /// it. It keeps its model alive, and a session applying it keeps it alive, so Dispose may come
    /// in any order.</summary>
    public sealed class LoraAdapter : IDisposable
    {
        readonly LoraHandle handle;
        int disposed;

        internal LoraAdapter(LoraHandle h, string path)
        {
            handle = h;
            Path = path;
            var s = new zf_lora_summary { struct_size = (uint)System.Runtime.InteropServices.Marshal.SizeOf(typeof(zf_lora_summary)) };
            ZerfooException.Check(NativeMethods.zf_lora_info(h, ref s), "zf_lora_info");
            Info = new LoraInfo { Rank = s.rank, Alpha = s.alpha, WeightCount = (int)s.n_weights };
        }

        internal LoraHandle Handle { get { return handle; } }

        /// <summary>The adapter file.</summary>
        public string Path { get; private set; }

        /// <summary>Rank, alpha and the number of adapted weights.</summary>
        public LoraInfo Info { get; private set; }

        /// <summary>Releases the adapter (sessions applying it keep it until they change their set).</summary>
        public void Dispose()
        {
            Interlocked.Exchange(ref disposed, 1);
            handle.Dispose();
        }
    }

    public sealed partial class Model
    {
        /// <summary>Loads the LoRA adapter at <paramref name="path"/> against this model
        /// (zf_lora_load). The architecture, every adapted weight's presence and the shapes are
        /// checked.</summary>
        /// <exception cref="ZerfooException">IO, Format (not a LoRA adapter), InvalidArgument
        /// (another model's adapter: the message names the tensor and both shapes), Unsupported.</exception>
        public LoraAdapter LoadLora(string path)
        {
            if (path == null) throw new ArgumentNullException("path");
            bool added = false;
            try
            {
                handle.DangerousAddRef(ref added);  // throws ObjectDisposedException if disposed
                IntPtr raw;
                ZerfooException.Check(NativeMethods.zf_lora_load(handle, Library.Utf8Z(path), out raw),
                                      "zf_lora_load(\"" + path + "\")");
                LoraHandle h = LoraHandle.FromNative(raw);
                try
                {
                    return new LoraAdapter(h, path);
                }
                catch
                {
                    h.Dispose();
                    throw;
                }
            }
            finally
            {
                if (added) handle.DangerousRelease();
            }
        }
    }

    public sealed partial class Session
    {
        /// <summary>Sets the adapters this session applies from now on, adapters[i] with
        /// scales[i] (zf_session_set_loras): an adapted weight computes W x + s B (A x),
        /// s = scale * alpha / rank. Empty arrays (or null) clear the set; scale 0 leaves an adapter
        /// out (the base model's output bit for bit). The conversation's KV cache stays as it was
        /// computed: <see cref="Reset"/> starts afresh under the new set.</summary>
        public void SetLoras(LoraAdapter[] adapters, float[] scales)
        {
            adapters = adapters ?? new LoraAdapter[0];
            scales = scales ?? new float[0];
            if (adapters.Length != scales.Length)
                throw new ArgumentException(adapters.Length + " adapters but " + scales.Length + " scales", "scales");
            Acquire();
            var added = new bool[adapters.Length];
            try
            {
                var ptrs = new IntPtr[adapters.Length];
                for (int i = 0; i < adapters.Length; ++i)
                {
                    if (adapters[i] == null) throw new ArgumentNullException("adapters[" + i + "]");
                    adapters[i].Handle.DangerousAddRef(ref added[i]);  // not freed during the call
                    ptrs[i] = adapters[i].Handle.DangerousGetHandle();
                }
                ZerfooException.Check(NativeMethods.zf_session_set_loras(handle, ptrs, scales, (UIntPtr)ptrs.Length),
                                      "zf_session_set_loras");
            }
            finally
            {
                for (int i = 0; i < adapters.Length; ++i)
                    if (added[i]) adapters[i].Handle.DangerousRelease();
                Release();
            }
        }
    }
}

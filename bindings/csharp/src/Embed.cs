using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;

namespace Zerfoo
{
    /// <summary>How an input's token states become one vector (ZF_POOLING_*).</summary>
    public enum Pooling
    {
        /// <summary>The file's pooling_type; <see cref="Last"/> for a generative model.</summary>
        Default = -1,
        /// <summary>One vector per token: not supported by <see cref="Model.Embed"/>.</summary>
        None = 0,
        /// <summary>The mean of every token's state.</summary>
        Mean = 1,
        /// <summary>The first token's state ([CLS] of BERT models).</summary>
        Cls = 2,
        /// <summary>The last token's state.</summary>
        Last = 3,
        /// <summary>The first token's state through the classification head (rerankers): the
        /// classifier's outputs, never normalized.</summary>
        Rank = 4,
    }

    /// <summary>Options of <see cref="Model.Embed"/>, <see cref="Model.EmbedTokens"/>,
    /// <see cref="Model.EmbedDimension"/> and <see cref="Model.Rerank"/> (zf_embed_params). Unset
    /// values keep zf_embed_params_init's defaults: the model's pooling, L2 normalization, every
    /// dimension, the model's threads.</summary>
    public sealed class EmbedOptions
    {
        /// <summary>The pooling (default <see cref="Zerfoo.Pooling.Default"/>).</summary>
        public Pooling? Pooling { get; set; }
        /// <summary>Leave vectors as pooled (ZF_EMBED_NO_NORMALIZE; default: L2-normalized).</summary>
        public bool NoNormalize { get; set; }
        /// <summary>Keep the first this many values, then normalize (Matryoshka-trained models;
        /// default 0 = the model's hidden size).</summary>
        public int? Dimensions { get; set; }
        /// <summary>CPU threads for the call (default 0 = the model's thread count).</summary>
        public int? Threads { get; set; }

        internal zf_embed_params ToNative()
        {
            var p = new zf_embed_params();
            ZerfooException.Check(NativeMethods.zf_embed_params_init(ref p,
                (UIntPtr)Marshal.SizeOf(typeof(zf_embed_params))), "zf_embed_params_init");
            if (Pooling.HasValue) p.pooling = (int)Pooling.Value;
            if (NoNormalize) p.flags |= 1u;
            if (Dimensions.HasValue) p.dimensions = Dimensions.Value;
            if (Threads.HasValue) p.n_threads = Threads.Value;
            return p;
        }

        internal static zf_embed_params Native(EmbedOptions o)
        {
            return (o ?? new EmbedOptions()).ToNative();
        }
    }

    public sealed partial class Model
    {
        /// <summary>Values per input that <see cref="Embed"/> returns with these options
        /// (zf_embed_dimension): the hidden size (or <see cref="EmbedOptions.Dimensions"/>), or for
        /// <see cref="Pooling.Rank"/> the number of classifier outputs. Thread-safe.</summary>
        /// <exception cref="ZerfooException">Unsupported (Pooling.None, or rank pooling without a
        /// classification head); InvalidArgument (a bad option).</exception>
        public int EmbedDimension(EmbedOptions options = null)
        {
            if (disposed != 0) throw new ObjectDisposedException("Model");
            var p = EmbedOptions.Native(options);
            UIntPtr dim;
            ZerfooException.Check(NativeMethods.zf_embed_dimension(handle, ref p, out dim), "zf_embed_dimension");
            return (int)dim;
        }

        /// <summary>One pooled vector per text (zf_embed), L2-normalized unless
        /// <see cref="EmbedOptions.NoNormalize"/>. Each text is tokenized with the model's special
        /// tokens added; the texts run batched and a text's vector does not depend on the others
        /// in the call. A generative model is pooled from its last token's state by default. CPU
        /// engine only. Thread-safe: any number of calls may run on one model at once.</summary>
        /// <exception cref="ZerfooException">InvalidArgument (no texts, a text that gives no tokens
        /// or is longer than the training context, a bad option); Unsupported.</exception>
        public unsafe float[][] Embed(IList<string> texts, EmbedOptions options = null)
        {
            if (texts == null) throw new ArgumentNullException("texts");
            if (disposed != 0) throw new ObjectDisposedException("Model");
            if (texts.Count == 0) throw new ZerfooException(Status.InvalidArgument, "zf_embed: no texts");
            int n = texts.Count;
            var offsets = new int[n + 1];
            var parts = new byte[n][];
            for (int i = 0; i < n; i++)
            {
                if (texts[i] == null) throw new ArgumentNullException("texts[" + i + "]");
                parts[i] = Encoding.UTF8.GetBytes(texts[i]);
                offsets[i + 1] = offsets[i] + parts[i].Length;
            }
            var all = new byte[Math.Max(1, offsets[n])];
            for (int i = 0; i < n; i++) Buffer.BlockCopy(parts[i], 0, all, offsets[i], parts[i].Length);
            var p = EmbedOptions.Native(options);
            int dim = DimensionOf(ref p);
            var flat = new float[Math.Max(1, n * dim)];
            var ptrs = new IntPtr[n];
            var lens = new UIntPtr[n];
            fixed (byte* b = all)
            fixed (IntPtr* pp = ptrs)
            fixed (UIntPtr* lp = lens)
            fixed (float* o = flat)
            {
                for (int i = 0; i < n; i++) { ptrs[i] = (IntPtr)(b + offsets[i]); lens[i] = (UIntPtr)parts[i].Length; }
                UIntPtr needed;
                ZerfooException.Check(NativeMethods.zf_embed(handle, ref p, pp, lp, (UIntPtr)n, o,
                    (UIntPtr)(n * dim), out needed), "zf_embed");
            }
            return Split(flat, n, dim);
        }

        /// <summary>Like <see cref="Embed"/>, for inputs already tokenized (zf_embed_tokens;
        /// nothing is added to them, each at least one token).</summary>
        /// <exception cref="ZerfooException">InvalidArgument also for a token outside the
        /// vocabulary.</exception>
        public unsafe float[][] EmbedTokens(IList<int[]> inputs, EmbedOptions options = null)
        {
            if (inputs == null) throw new ArgumentNullException("inputs");
            if (disposed != 0) throw new ObjectDisposedException("Model");
            int n = inputs.Count;
            if (n == 0) throw new ZerfooException(Status.InvalidArgument, "zf_embed_tokens: no inputs");
            var handles = new GCHandle[n];
            var ptrs = new IntPtr[n];
            var lens = new UIntPtr[n];
            var p = EmbedOptions.Native(options);
            int dim = DimensionOf(ref p);
            var flat = new float[Math.Max(1, n * dim)];
            try
            {
                for (int i = 0; i < n; i++)
                {
                    if (inputs[i] == null) throw new ArgumentNullException("inputs[" + i + "]");
                    handles[i] = GCHandle.Alloc(inputs[i], GCHandleType.Pinned);
                    ptrs[i] = handles[i].AddrOfPinnedObject();
                    lens[i] = (UIntPtr)inputs[i].Length;
                }
                fixed (IntPtr* pp = ptrs)
                fixed (UIntPtr* lp = lens)
                fixed (float* o = flat)
                {
                    UIntPtr needed;
                    ZerfooException.Check(NativeMethods.zf_embed_tokens(handle, ref p, pp, lp, (UIntPtr)n, o,
                        (UIntPtr)(n * dim), out needed), "zf_embed_tokens");
                }
            }
            finally
            {
                foreach (var h in handles) if (h.IsAllocated) h.Free();
            }
            return Split(flat, n, dim);
        }

        /// <summary>Scores <paramref name="documents"/> against <paramref name="query"/> with a
        /// reranker (zf_rerank; a model with a classification head such as bge-reranker): one
        /// unnormalized score per document, in order (higher = more relevant). Only
        /// <see cref="EmbedOptions.Pooling"/> (Default or Rank) and <see cref="EmbedOptions.Threads"/>
        /// apply. Thread-safe.</summary>
        /// <exception cref="ZerfooException">Unsupported (no classification head);
        /// InvalidArgument.</exception>
        public unsafe float[] Rerank(string query, IList<string> documents, EmbedOptions options = null)
        {
            if (query == null) throw new ArgumentNullException("query");
            if (documents == null) throw new ArgumentNullException("documents");
            if (disposed != 0) throw new ObjectDisposedException("Model");
            int n = documents.Count;
            byte[] q = Encoding.UTF8.GetBytes(query);
            var offsets = new int[n + 1];
            var parts = new byte[n][];
            for (int i = 0; i < n; i++)
            {
                if (documents[i] == null) throw new ArgumentNullException("documents[" + i + "]");
                parts[i] = Encoding.UTF8.GetBytes(documents[i]);
                offsets[i + 1] = offsets[i] + parts[i].Length;
            }
            var all = new byte[Math.Max(1, offsets[n])];
            for (int i = 0; i < n; i++) Buffer.BlockCopy(parts[i], 0, all, offsets[i], parts[i].Length);
            var p = EmbedOptions.Native(options);
            var scores = new float[Math.Max(1, n)];
            var ptrs = new IntPtr[Math.Max(1, n)];
            var lens = new UIntPtr[Math.Max(1, n)];
            var qb = q.Length > 0 ? q : new byte[1];
            fixed (byte* b = all)
            fixed (byte* qp = qb)
            fixed (IntPtr* pp = ptrs)
            fixed (UIntPtr* lp = lens)
            fixed (float* s = scores)
            {
                for (int i = 0; i < n; i++) { ptrs[i] = (IntPtr)(b + offsets[i]); lens[i] = (UIntPtr)parts[i].Length; }
                ZerfooException.Check(NativeMethods.zf_rerank(handle, ref p, qp, (UIntPtr)q.Length, pp, lp,
                    (UIntPtr)n, s), "zf_rerank");
            }
            if (n == scores.Length) return scores;
            return new float[0];
        }

        int DimensionOf(ref zf_embed_params p)
        {
            UIntPtr dim;
            ZerfooException.Check(NativeMethods.zf_embed_dimension(handle, ref p, out dim), "zf_embed_dimension");
            return (int)dim;
        }

        static float[][] Split(float[] flat, int n, int dim)
        {
            var r = new float[n][];
            for (int i = 0; i < n; i++)
            {
                r[i] = new float[dim];
                Array.Copy(flat, i * dim, r[i], 0, dim);
            }
            return r;
        }
    }
}

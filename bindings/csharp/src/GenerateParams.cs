// GenerateOptions as a native zf_generate_params, for zf_generate and for a chat turn's
// zf_turn_params.generate: the struct and the unmanaged strings it points to, freed together.
using System;
using System.Runtime.InteropServices;

namespace Zerfoo
{
    internal sealed class NativeGenerateParams : IDisposable
    {
        /// <summary>The filled struct; its pointers stay valid until Dispose.</summary>
        internal zf_generate_params Value;
        readonly UnmanagedAllocations owned = new UnmanagedAllocations();

        /// <summary>zf_generate_params_init's defaults with the options' non-null fields over them.</summary>
        internal static NativeGenerateParams From(GenerateOptions o)
        {
            var g = new NativeGenerateParams();
            try
            {
                ZerfooException.Check(NativeMethods.zf_generate_params_init(ref g.Value,
                    (UIntPtr)Marshal.SizeOf(typeof(zf_generate_params))), "zf_generate_params_init");
                if (o != null) g.Fill(o);
                return g;
            }
            catch
            {
                g.Dispose();
                throw;
            }
        }

        void Fill(GenerateOptions o)
        {
            if (o.MaxTokens.HasValue) Value.max_tokens = o.MaxTokens.Value;
            if (o.Temperature.HasValue) Value.temperature = o.Temperature.Value;
            if (o.TopK.HasValue) Value.top_k = o.TopK.Value;
            if (o.TopP.HasValue) Value.top_p = o.TopP.Value;
            if (o.MinP.HasValue) Value.min_p = o.MinP.Value;
            if (o.RepeatPenalty.HasValue) Value.repeat_penalty = o.RepeatPenalty.Value;
            if (o.RepeatLastN.HasValue) Value.repeat_last_n = o.RepeatLastN.Value;
            if (o.Seed.HasValue) Value.seed = o.Seed.Value;
            if (o.NoSpecial) Value.flags |= 1u;
            if (o.NoParseSpecial) Value.flags |= 2u;
            if (o.IgnoreEos) Value.flags |= 4u;
            if (o.Logprobs.HasValue) Value.n_logprobs = o.Logprobs.Value;
            if (o.DraftMax.HasValue) Value.draft_max = o.DraftMax.Value;
            if (o.DraftMin.HasValue) Value.draft_min = o.DraftMin.Value;
            if (o.Constraint != null)
            {
                Value.constraint = owned.Own(Library.AllocUtf8Z(o.Constraint.Text));
                Value.constraint_kind = (int)o.Constraint.Kind;
            }
            if (o.ConstraintTrigger != null) Value.constraint_trigger = owned.Own(Library.AllocUtf8Z(o.ConstraintTrigger));
            if (o.Stop != null && o.Stop.Count > 0)
            {
                IntPtr array = owned.Own(Marshal.AllocHGlobal(IntPtr.Size * o.Stop.Count));
                for (int i = 0; i < o.Stop.Count; i++)
                    Marshal.WriteIntPtr(array, i * IntPtr.Size, owned.Own(Library.AllocUtf8Z(o.Stop[i])));
                Value.stop = array;
                Value.n_stop = (UIntPtr)o.Stop.Count;
            }
        }

        /// <summary>A copy of <see cref="Value"/> in unmanaged memory (zf_turn_params.generate is
        /// a pointer), freed with the rest.</summary>
        internal IntPtr ToUnmanaged()
        {
            IntPtr p = owned.Own(Marshal.AllocHGlobal(Marshal.SizeOf(typeof(zf_generate_params))));
            Marshal.StructureToPtr(Value, p, false);
            return p;
        }

        public void Dispose() { owned.Dispose(); }
    }
}

// Unmanaged memory a native params struct points into (strings, arrays, nested structs), freed
// together when the struct is done with.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Zerfoo
{
    internal sealed class UnmanagedAllocations : IDisposable
    {
        readonly List<IntPtr> blocks = new List<IntPtr>();

        /// <summary>Takes <paramref name="p"/> (from Marshal.AllocHGlobal) to free with the rest; returns it.</summary>
        internal IntPtr Own(IntPtr p)
        {
            blocks.Add(p);
            return p;
        }

        public void Dispose()
        {
            foreach (IntPtr p in blocks) Marshal.FreeHGlobal(p);
            blocks.Clear();
        }
    }
}

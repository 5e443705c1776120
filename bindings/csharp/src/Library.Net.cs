// .NET 5+ only (Zerfoo.csproj, net8.0); Mono's mcs never compiles this (CI cannot build it:
// no .NET SDK there). NativeLibrary replaces the dlopen preload and the dllmap of the Mono path.
#if NET5_0_OR_GREATER
using System;
using System.Reflection;
using System.Runtime.InteropServices;
using System.Threading;

namespace Zerfoo
{
    public static partial class Library
    {
        static IntPtr preloaded;   // the $ZERFOO_LIBRARY handle, when set
        static int resolverSet;

        static partial void PlatformInit()
        {
            // SetDllImportResolver may be called once per assembly; a failed EnsureLoaded retries.
            if (Interlocked.Exchange(ref resolverSet, 1) == 0)
                NativeLibrary.SetDllImportResolver(typeof(Library).Assembly, Resolve);
        }

        static string PreloadNet(string path)
        {
            try
            {
                preloaded = NativeLibrary.Load(path);
                return null;
            }
            catch (Exception e)
            {
                return e.Message;
            }
        }

        // "zerfoo" -> $ZERFOO_LIBRARY if it was loaded, else the platform name (libzerfoo.so.0,
        // libzerfoo.0.dylib, zerfoo.dll) through the default search; other names: the default.
        static IntPtr Resolve(string name, Assembly assembly, DllImportSearchPath? paths)
        {
            if (name != NativeMethods.Lib) return IntPtr.Zero;
            if (preloaded != IntPtr.Zero) return preloaded;
            IntPtr h;
            return NativeLibrary.TryLoad(DefaultName, assembly, paths, out h) ? h : IntPtr.Zero;
        }
    }
}
#endif

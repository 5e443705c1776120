// Stand-ins for the .NET 5+ APIs that Library.Net.cs uses, so that test.sh can compile the
// NET5_0_OR_GREATER branch of the binding with Mono's mcs (Session.Async.cs, a C# 8 async
// iterator, is beyond mcs). Compile-only: nothing here runs.
namespace System.Runtime.InteropServices
{
    public delegate IntPtr DllImportResolver(string libraryName, System.Reflection.Assembly assembly,
                                             DllImportSearchPath? searchPath);

    public static class NativeLibrary
    {
        public static IntPtr Load(string libraryPath) { throw new NotImplementedException(); }

        public static bool TryLoad(string libraryName, System.Reflection.Assembly assembly,
                                   DllImportSearchPath? searchPath, out IntPtr handle)
        {
            throw new NotImplementedException();
        }

        public static void SetDllImportResolver(System.Reflection.Assembly assembly, DllImportResolver resolver)
        {
            throw new NotImplementedException();
        }
    }
}

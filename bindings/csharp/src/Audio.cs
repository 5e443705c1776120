using System;

namespace Zerfoo
{
    /// <summary>Audio in the prompt: the PCM audio projectors take (<see cref="Mmproj.EmbedAudio"/>,
    /// <c>Session.EvalAudio</c>) and the WAV bytes a chat turn's
    /// <see cref="ChatRequestMessage.Audio"/> takes.</summary>
    public static class Audio
    {
        /// <summary>The PCM rate audio projectors take: 16 kHz mono.</summary>
        public const int SampleRate = 16000;
        /// <summary>The shortest clip: 10 ms (ZF_AUDIO_MIN_SAMPLES).</summary>
        public const int MinSamples = 160;
        /// <summary>The longest clip: 10 minutes (ZF_AUDIO_MAX_SAMPLES).</summary>
        public const int MaxSamples = 9600000;

        /// <summary>16 kHz mono samples as a WAV file's bytes (32-bit IEEE float: the samples
        /// exactly), for a clip decoded from another container (MP3, FLAC, Ogg) or made in memory;
        /// <see cref="SpeechModel.DecodeWav"/> reads it back unchanged.</summary>
        public static byte[] EncodeWav(float[] pcm)
        {
            if (pcm == null) throw new ArgumentNullException("pcm");
            int dataBytes = checked(pcm.Length * 4);
            var b = new byte[44 + dataBytes];
            int at = 0;
            Action<string> tag = t => { foreach (char c in t) b[at++] = (byte)c; };
            Action<uint, int> put = (v, n) => { for (int i = 0; i < n; i++) b[at++] = (byte)(v >> (8 * i)); };
            tag("RIFF");
            put((uint)(36 + dataBytes), 4);
            tag("WAVEfmt ");
            put(16, 4);                    // fmt chunk size
            put(3, 2);                     // WAVE_FORMAT_IEEE_FLOAT
            put(1, 2);                     // mono
            put(SampleRate, 4);
            put(SampleRate * 4, 4);        // byte rate
            put(4, 2);                     // block align
            put(32, 2);                    // bits per sample
            tag("data");
            put((uint)dataBytes, 4);
            foreach (float v in pcm) put((uint)BitConverter.ToInt32(BitConverter.GetBytes(v), 0), 4);
            return b;
        }
    }
}

// The build's identity (git sha of the source tree at configure time, GPU backend, compiler),
// defined in the generated build_info.cpp.
#pragma once

extern const char* const kDs4kitGitSha;
extern const char* const kDs4kitGpuBackend;
extern const char* const kDs4kitCompiler;

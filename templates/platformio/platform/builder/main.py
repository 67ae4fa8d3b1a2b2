# SCons builder of the mcu-gen local dev-platform: the system cross toolchain
# (arm-none-eabi or the board's build.toolchain prefix), the board's CPU/FPU flags on the compiler AND the linker (SCons
# ParseFlags keeps -m flags away from the linker otherwise), the project's
# startup + linker script, -O2 (the project's build_flags), no exceptions/RTTI.
import os

from SCons.Script import AlwaysBuild, Builder, Default, DefaultEnvironment

env = DefaultEnvironment()
board = env.BoardConfig()
cpu_flags = board.get("build.cpu_flags", "-mcpu=%s -mthumb" % board.get("build.cpu", "cortex-m33")).split()
# The board's GNU toolchain prefix (arm-none-eabi, riscv64-unknown-elf), the CPU flags of the
# link (multilib; default: the compiler's) and its C library specs (default: newlib-nano).
tc = board.get("build.toolchain", "arm-none-eabi")
link_cpu_flags = board.get("build.link_cpu_flags", " ".join(cpu_flags)).split()
link_libs = board.get("build.link_libs", "--specs=nano.specs --specs=nosys.specs").split()

env.Replace(
    AR=tc + "-gcc-ar", AS=tc + "-as", CC=tc + "-gcc", CXX=tc + "-g++",
    OBJCOPY=tc + "-objcopy", RANLIB=tc + "-gcc-ranlib", SIZETOOL=tc + "-size",
    ARFLAGS=["rc"],
    SIZEPROGREGEXP=r"^(?:\.text|\.pte|\.data|\.rodata|\.ARM.exidx)\s+(\d+).*",
    SIZEDATAREGEXP=r"^(?:\.data|\.bss|\.noinit)\s+(\d+).*",
    SIZECHECKCMD="$SIZETOOL -A -d $SOURCES",
    SIZEPRINTCMD="$SIZETOOL -B -d $SOURCES",
    PROGNAME="firmware",
    PROGSUFFIX=".elf",
    LDSCRIPT_PATH=os.path.join("$PROJECT_DIR", board.get("build.ldscript")),
)
if not board.get("build.link_cxx", True):  # no libstdc++ for this toolchain: link with gcc
    env.Replace(LINK=tc + "-gcc")
env.Append(
    ASFLAGS=cpu_flags + ["-x", "assembler-with-cpp"],
    CCFLAGS=cpu_flags + ["-ffunction-sections", "-fdata-sections", "-Wall"],
    CXXFLAGS=["-std=c++17", "-fno-exceptions", "-fno-rtti", "-fno-threadsafe-statics", "-fno-use-cxa-atexit"],
    CFLAGS=["-std=c11"],
    LINKFLAGS=link_cpu_flags + ["-nostartfiles", "-Wl,--gc-sections"] + link_libs
    + ["-Wl,-Map,${BUILD_DIR}/${PROGNAME}.map"],
    LIBS=["m"],
)
env.Append(BUILDERS=dict(
    ElfToBin=Builder(action=env.VerboseAction("$OBJCOPY -O binary $SOURCES $TARGET", "Building $TARGET"),
                     suffix=".bin"),
))

# Files listed in the project's `custom_size_sources` (runtime, board, generated sources)
# are compiled for size, the rest (the kernels) at the project's -O level, as the
# CMake project does: a -Os given per file comes after, and wins over, the global flag.
size_sources = [s.strip().replace("\\", "/") for s in
                env.GetProjectOption("custom_size_sources", "").splitlines() if s.strip()]


def optimize_for_size(env, node):
    path = node.srcnode().get_abspath().replace("\\", "/")
    if any(path.endswith("/" + s) for s in size_sources):
        return env.Object(node, CCFLAGS=env["CCFLAGS"] + ["-Os"])
    return node


if size_sources:
    env.AddBuildMiddleware(optimize_for_size)

target_elf = env.BuildProgram()
target_bin = env.ElfToBin(os.path.join("$BUILD_DIR", "${PROGNAME}"), target_elf)
env.Depends(target_bin, "checkprogsize")
AlwaysBuild(env.Alias("nobuild", target_bin))
target_buildprog = env.Alias("buildprog", target_bin, target_bin)
target_size = env.AddPlatformTarget("size", target_elf, env.VerboseAction("$SIZEPRINTCMD", "Calculating size $SOURCE"),
                                    "Program Size", "Calculate program size")
Default([target_buildprog, target_size])

# SCons builder of the mcu-gen local dev-platform: the system arm-none-eabi
# toolchain, the board's CPU/FPU flags on the compiler AND the linker (SCons
# ParseFlags keeps -m flags away from the linker otherwise), the project's
# startup + linker script, -O2 (the project's build_flags), no exceptions/RTTI.
import os

from SCons.Script import AlwaysBuild, Builder, Default, DefaultEnvironment

env = DefaultEnvironment()
board = env.BoardConfig()
cpu_flags = board.get("build.cpu_flags", "-mcpu=%s -mthumb" % board.get("build.cpu", "cortex-m33")).split()

env.Replace(
    AR="arm-none-eabi-gcc-ar", AS="arm-none-eabi-as", CC="arm-none-eabi-gcc", CXX="arm-none-eabi-g++",
    OBJCOPY="arm-none-eabi-objcopy", RANLIB="arm-none-eabi-gcc-ranlib", SIZETOOL="arm-none-eabi-size",
    ARFLAGS=["rc"],
    SIZEPROGREGEXP=r"^(?:\.text|\.pte|\.data|\.rodata|\.ARM.exidx)\s+(\d+).*",
    SIZEDATAREGEXP=r"^(?:\.data|\.bss|\.noinit)\s+(\d+).*",
    SIZECHECKCMD="$SIZETOOL -A -d $SOURCES",
    SIZEPRINTCMD="$SIZETOOL -B -d $SOURCES",
    PROGNAME="firmware",
    PROGSUFFIX=".elf",
    LDSCRIPT_PATH=os.path.join("$PROJECT_DIR", board.get("build.ldscript")),
)
env.Append(
    ASFLAGS=cpu_flags + ["-x", "assembler-with-cpp"],
    CCFLAGS=cpu_flags + ["-ffunction-sections", "-fdata-sections", "-Wall"],
    CXXFLAGS=["-std=c++17", "-fno-exceptions", "-fno-rtti", "-fno-threadsafe-statics", "-fno-use-cxa-atexit"],
    CFLAGS=["-std=c11"],
    LINKFLAGS=cpu_flags + ["-nostartfiles", "-Wl,--gc-sections", "--specs=nano.specs", "--specs=nosys.specs",
                           "-Wl,-Map,${BUILD_DIR}/${PROGNAME}.map"],
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

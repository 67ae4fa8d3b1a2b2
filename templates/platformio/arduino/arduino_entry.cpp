// Arduino entry of a generated mcu-gen firmware project: the framework owns
// main(), so platformio.ini renames the firmware's main() (src/main.cpp) to
// mcu_gen_main() with build_src_flags. It boots the PAL (pal_arduino.cpp)
// and serves the verify protocol forever.
#include <Arduino.h>

int mcu_gen_main();

void setup() {}

void loop() { mcu_gen_main(); }

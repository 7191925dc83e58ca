// Figures that vary from run to run, or from machine to machine, in what a program prints. Normally
// these functions return the text as it is. Under TRIPTYCH_LESSON_OUTPUT=marked they put it between
// marks: tools/lesson_outputs.py runs the lesson programs, and the `triptych` commands a lesson
// quotes, that way, compares the outputs the READMEs quote with what is printed now, and skips
// what is marked.
//   measured(text)        a time, a rate, a ratio of times: different on every run
//   machine_figure(text)  a figure whose last digits depend on the instruction set the build
//                         compiles for (-march=native: FMA or not, 8 or 16 floats a vector) and
//                         on the CPU: an error against the float64 reference, a loss after a
//                         thousand training steps
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace triptych {

inline bool marked_output() {
    static const bool marked = [] {
        const char* value = std::getenv("TRIPTYCH_LESSON_OUTPUT");
        return value != nullptr && std::string(value) == "marked";
    }();
    return marked;
}
inline std::string measured(const std::string& text) {
    return marked_output() ? "\u27e6" + text + "\u27e7" : text;
}
inline std::string machine_figure(const std::string& text) {
    return marked_output() ? "\u27e8" + text + "\u27e9" : text;
}
// A number printed with a printf format: measured_number("%.2f", 1.5) = "1.50", marked.
inline std::string formatted(const char* format, double value) {
    char text[64];
    std::snprintf(text, sizeof text, format, value);
    return text;
}
inline std::string measured_number(const char* format, double value) {
    return measured(formatted(format, value));
}
inline std::string machine_number(const char* format, double value) {
    return machine_figure(formatted(format, value));
}

}  // namespace triptych

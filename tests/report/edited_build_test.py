#!/usr/bin/env python3
"""tools/edited_build.py, and the exercises' edit marks of tools/lesson_outputs.py, on a small CMake
project of their own (a static library, a header, a lesson program), built with each generator
the tool reads (Unix Makefiles, and Ninja where it is installed): an edit to the header, to the
library's source or to the program's own source changes what the rebuilt program prints; the
source tree and the build are left byte for byte and time for time as they were, and the file
names the program prints are the source tree's; an edit whose
text is not in the file once, or to a file the program is not built from, is refused by name, and
one that does not compile with the compiler's message; a README whose exercise quotes what the
edited program prints passes, and fails once the quote is stale; the program's instrumented twin
is built again with the same edits when asked, and a program without one is refused.

    edited_build_test.py --tools tools
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from snapshots import snapshot

TOOLS = None  # set from the command line

FILES = {
    "CMakeLists.txt": """cmake_minimum_required(VERSION 3.25)
project(tiny LANGUAGES CXX)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
add_library(steps STATIC src/steps.cpp)
target_include_directories(steps PUBLIC ${PROJECT_SOURCE_DIR})
add_subdirectory(lessons)
""",
    # The program's instrumented twin, as cmake/gpu.cmake places it: instrumented/ beside it,
    # under the same name.
    "lessons/CMakeLists.txt": """add_executable(lesson_99_test 99_test/main.cpp)
target_link_libraries(lesson_99_test steps)
add_executable(lesson_99_test_twin 99_test/main.cpp)
target_link_libraries(lesson_99_test_twin steps)
target_compile_definitions(lesson_99_test_twin PRIVATE TWIN)
set_target_properties(lesson_99_test_twin PROPERTIES OUTPUT_NAME lesson_99_test
                      RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/instrumented)
""",
    "src/greeting.hpp": "inline const char* greeting() { return \"hello\"; }\n",
    "src/steps.hpp": "#include \"factor.hpp\"\nint steps();\n",
    # factor.hpp is included from beside steps.hpp, not from the include path: an edit to it
    # cannot reach the program through the edited copies, and must say so.
    "src/factor.hpp": "inline int factor() { return 1; }\n",
    "src/steps.cpp": "#include \"src/steps.hpp\"\nint steps() { return 3 * factor(); }\n",
    "lessons/99_test/main.cpp": """#include <cstdio>
#include "src/greeting.hpp"
#include "src/steps.hpp"
#ifdef TWIN
const char* twin = "twin ";
#else
const char* twin = "";
#endif
int main() {
    std::printf("%s%s %d\\n%s\\n", twin, greeting(), steps(), __FILE__);
    return 0;
}
""",
}


def generators():
    return ["Unix Makefiles"] + (["Ninja"] if shutil.which("ninja") else [])


class EditedBuild(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, TOOLS)
        import edited_build  # noqa: E402  (the tool under test)
        cls.tool = edited_build
        cls.root = tempfile.mkdtemp()
        cls.source = os.path.join(cls.root, "source")
        for path, text in FILES.items():
            os.makedirs(os.path.dirname(os.path.join(cls.source, path)), exist_ok=True)
            with open(os.path.join(cls.source, path), "w", encoding="utf-8") as f:
                f.write(text)
        cls.builds = {}
        for generator in generators():
            build = os.path.join(cls.root, generator.replace(" ", "_"))
            for command in (["cmake", "-S", cls.source, "-B", build, "-G", generator],
                            ["cmake", "--build", build]):
                subprocess.run(command, check=True, capture_output=True)
            cls.builds[generator] = build
        if "Ninja" not in cls.builds:
            print("ninja is not installed: only the Unix Makefiles build is tested",
                  file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root)

    def rebuilt_output(self, build, edits, program="lessons/lesson_99_test", instrumented=False):
        work = tempfile.mkdtemp(dir=self.root)
        program = self.tool.build_edited(build, program, [self.tool.Edit(*e) for e in edits],
                                         self.source, work, instrumented)
        self.assertTrue(program.startswith(work))
        if instrumented:  # the twin, where the edited program looks for it
            program = os.path.join(work, "instrumented", os.path.basename(program))
        lines = subprocess.run([program], capture_output=True, text=True,
                               check=True).stdout.split("\n")
        # The file names the program prints are the source tree's, not the edited copies'.
        self.assertEqual(lines[1], os.path.join(self.source, "lessons", "99_test", "main.cpp"))
        return lines[0]

    def test_each_kind_of_edit_changes_the_rebuilt_program_alone(self):
        for generator, build in self.builds.items():
            with self.subTest(generator=generator):
                before = snapshot(self.root, times=True)
                original = os.path.join(build, "lessons", "lesson_99_test")
                self.assertEqual(subprocess.run([original], capture_output=True,
                                                text=True).stdout.split("\n")[0], "hello 3")
                # A header, which only the program's own object includes.
                self.assertEqual(self.rebuilt_output(
                    build, [("src/greeting.hpp", '"hello"', '"bye"')]), "bye 3")
                # The static library's source.
                self.assertEqual(self.rebuilt_output(
                    build, [("src/steps.cpp", "return 3", "return 4")]), "hello 4")
                # The program's own source, and two files at once.
                self.assertEqual(self.rebuilt_output(
                    build, [("lessons/99_test/main.cpp", "%s%s %d", "%s%s, %d"),
                            ("src/steps.cpp", "return 3", "return 5")]), "hello, 5")
                # The instrumented twin too, with the same edits.
                self.assertEqual(self.rebuilt_output(
                    build, [("src/steps.cpp", "return 3", "return 6")], instrumented=True),
                    "twin hello 6")
                after = snapshot(self.root, times=True)
                for path, (text, mtime) in before.items():
                    self.assertEqual(after.get(path), (text, mtime),
                                     f"{path} changed or went away")
                # New files only in the folders the rebuilt programs were given.
                for path in set(after) - set(before):
                    self.assertTrue(path.startswith("tmp"), path)

    def test_a_bad_edit_is_refused_by_name(self):
        build = next(iter(self.builds.values()))
        for edits, expected in (
                ([("src/steps.cpp", "return 7;", "return 4;")], "`return 7;` occurs 0 times"),
                ([("src/steps.cpp", "steps", "step")], "`steps` occurs 2 times"),
                ([("src/steps.cpp", "int", "long")], "ambiguating new declaration"),
                ([("src/absent.cpp", "a", "b")], "edit of src/absent.cpp:"),
                ([("CMakeLists.txt", "tiny", "small")], "no object of lessons/lesson_99_test is "
                                                         "compiled from CMakeLists.txt"),
                ([("src/factor.hpp", "return 1;", "return 2;")], "was compiled again without "
                                                                  "the edited copy of "
                                                                  "src/factor.hpp"),
                ([("/etc/hostname", "a", "b")], "name a file inside the source tree"),
                ([("../source/src/steps.cpp", "return 3", "return 4")],
                 "name a file inside the source tree")):
            with self.subTest(edits=edits):
                with self.assertRaises(self.tool.EditError) as raised:
                    self.rebuilt_output(build, edits)
                self.assertIn(expected, str(raised.exception))
        with self.assertRaises(self.tool.EditError) as raised:
            self.rebuilt_output(self.source, [("src/steps.cpp", "return 3", "return 4")])
        self.assertIn("not a CMake build folder", str(raised.exception))
        with self.assertRaises(self.tool.EditError) as raised:  # a twin has no twin
            self.rebuilt_output(build, [("src/steps.cpp", "return 3", "return 4")],
                                "lessons/instrumented/lesson_99_test", instrumented=True)
        self.assertIn("lessons/instrumented/lesson_99_test has no instrumented copy "
                      "lessons/instrumented/instrumented/lesson_99_test", str(raised.exception))

    def test_a_readme_quotes_what_the_edited_program_prints(self):
        readme = os.path.join(self.source, "lessons", "99_test", "README.md")

        def check(quoted, build):
            with open(readme, "w", encoding="utf-8") as f:
                f.write("# Lesson 99\n\n1. **Say goodbye.** Replace `\"hello\"` by `\"bye\"`:\n\n"
                        "   <!-- edit: src/greeting.hpp: `\"hello\"` \u2192 `\"bye\"` -->\n"
                        "   <!-- edit: src/steps.cpp: `return 3` \u2192 `return 4` -->\n"
                        "   <!-- output: lesson_99_test; part -->\n"
                        f"   ```\n   {quoted}\n   ```\n2. Next.\n")
            return subprocess.run([sys.executable, os.path.join(TOOLS, "lesson_outputs.py"),
                                   "--check", "--bin", os.path.join(build, "lessons"), "--root",
                                   self.source], capture_output=True, text=True)

        try:
            for generator, build in self.builds.items():
                with self.subTest(generator=generator):
                    done = check("bye 4", build)
                    self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
                    done = check("bye 3", build)
                    self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
                    self.assertIn("the output quoted for lesson_99_test (built with the edits "
                                  "above it) is stale", done.stderr)
                    self.assertIn("quoted:  bye 3", done.stderr)
        finally:
            os.remove(readme)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", required=True, help="the folder of tools/edited_build.py")
    args, rest = parser.parse_known_args()
    TOOLS = os.path.abspath(args.tools)
    unittest.main(argv=[sys.argv[0], *rest])

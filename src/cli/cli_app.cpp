// See cli_app.hpp.
#include "cli_app.hpp"

#include "util/watchdog.hpp"

namespace kplay::cli {
namespace {
std::vector<std::string>& arguments() {
  static std::vector<std::string> args;
  return args;
}
}  // namespace

const std::vector<std::string>& program_arguments() { return arguments(); }
void set_program_arguments(std::vector<std::string> args) { arguments() = std::move(args); }
void arm_watchdog(double seconds) { watchdog::configure(seconds, kExitTimeout); }

bool takes_value(const CLI::Option& option) {
  return option.get_expected_max() != 0 && option.get_type_size_max() != 0;
}

void refuse_empty_values(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    if (!takes_value(*o)) continue;
    o->transform(CLI::Validator(
        [](const std::string& value) {
          return value.empty() ? std::string("an empty value is not allowed (give one, or leave the option out)")
                               : std::string();
        },
        ""));
  }
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) refuse_empty_values(*sub);
}

std::unique_ptr<CliApp> make_cli_app() {
  auto cli = std::make_unique<CliApp>();
  CLI::App& app = cli->app;
  app.require_subcommand(1);
  app.set_version_flag("--version", "kplay " KPLAY_VERSION_TEXT, "print kplay's version and exit");
  cli->commands.push_back(make_devices_command(app));
  cli->commands.push_back(make_list_command(app));
  cli->commands.push_back(make_emit_command(app));
  cli->commands.push_back(make_run_command(app));
  cli->commands.push_back(make_db_command(app));
  cli->commands.push_back(make_autotune_command(app));
  cli->commands.push_back(make_check_command(app));
  cli->commands.push_back(make_bench_command(app));
  refuse_empty_values(app);
  return cli;
}

}  // namespace kplay::cli

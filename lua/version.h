// The version the `tandem` banner and `T.version` report.
#pragma once

#define TANDEM_VERSION "0.1.0"

# Batsim 4.2.1 with batsim-google.patch, on nur-kapack's Batsim package.
#
#   nix-build engine/batsim-google.nix            # ./result/bin/batsim --version: 4.2.1+batsim-google
#   nix-build engine/batsim-google.nix -A stock   # the same Batsim 4.2.1 without the patch
#
# nur-kapack dropped its Batsim packages in June 2025 and never packaged 4.2.1, so this pins the
# last nur-kapack commit that builds Batsim (4.2.0, with SimGrid 3.34 and its pinned nixpkgs) and
# moves its source to the v4.2.1 tag. Every download is pinned by hash.
{
  kapack ? import (fetchTarball {
    url = "https://github.com/oar-team/nur-kapack/archive/018ce0c1872fa66b30aa054ae649b4fca6d6d64a.tar.gz";
    sha256 = "1dpa6cdvgpnl0bzz2kc4g9fbfwg2i7rg66fy3r1fyhad2ns9i1p9";
  }) { },
}:

let
  stock = kapack.batsim.overrideAttrs (old: {
    version = "4.2.1";
    src = kapack.pkgs.fetchFromGitLab {
      domain = "gitlab.inria.fr";
      owner = "batsim";
      repo = "batsim";
      rev = "v4.2.1";
      hash = "sha256-xecLKFRIpoI149Aj4wFKiW4p0ClzbQuCbzwFwon5igA=";
    };
  });
in
stock.overrideAttrs (old: {
  pname = "batsim-google";
  patches = (old.patches or [ ]) ++ [ ./batsim-google.patch ];
  passthru = (old.passthru or { }) // {
    inherit stock;
  };
})

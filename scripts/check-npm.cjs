// npm's preinstall of this project (package.json): stops `npm ci` and `npm install` on an npm that would leave
// the project on the wrong Node. npm before 11.7 (npm 10, which Node 20 and 22 ship, and 11.0 to 11.6)
// installs scripts/node-runtime's Node 24 without linking node_modules/.bin/node, so every npm script would
// run on the machine's Node, silently (CONTRIBUTING.md, "Node 24 comes from npm"). Plain CommonJS: it runs on
// whatever Node runs npm, before the project's own exists.
'use strict';

const MIN = [11, 7];
const agent = process.env.npm_config_user_agent || '';
const match = /^npm\/(\d+)\.(\d+)\.(\d+)/.exec(agent);

if (match) {
  const [major, minor] = [Number(match[1]), Number(match[2])];
  if (major < MIN[0] || (major === MIN[0] && minor < MIN[1])) {
    const version = `${match[1]}.${match[2]}.${match[3]}`;
    process.stderr.write(
      `\nThis project needs npm ${MIN.join('.')} or newer; this is npm ${version}, which would install the project's\n` +
        "Node 24 without linking it (node_modules/.bin/node), so the scripts would run on this machine's Node\n" +
        `(${process.version}). Install a newer npm, then run the same command again:\n\n` +
        '    npm install -g npm@11\n\n' +
        'npm 11 runs on Node ^20.17.0 or >=22.9.0 (CONTRIBUTING.md, "Node 24 comes from npm").\n\n',
    );
    process.exit(1);
  }
}

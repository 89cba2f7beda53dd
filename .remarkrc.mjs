// `npm run lint:docs`: every relative link and #anchor of the README and docs/ resolves, to a file
// of the repository or a heading of its page. Links to other sites are not checked (no network).
import remarkValidateLinks from 'remark-validate-links'

export default {
  plugins: [[remarkValidateLinks, { repository: false }]],
}

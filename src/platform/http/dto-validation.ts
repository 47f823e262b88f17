import type * as ClassValidator from 'class-validator';

/**
 * The class-validator decorators the request DTOs use, and the two calls the validation pipe makes,
 * each loaded from its own file: the package's index loads every one of its validators, and with
 * them the whole of `validator` and `libphonenumber-js` (some 320 modules, the largest part of what
 * the DTOs cost a start), where these need about 50. The rules are recorded in class-validator's one
 * metadata storage (a global), so a rule declared here and one declared through the index are the
 * same. A DTO imports its decorators from here; one missing is added here from its file under
 * class-validator/cjs/decorator/.
 */
type CV = typeof ClassValidator;

export const ArrayMaxSize: CV['ArrayMaxSize'] = require('class-validator/cjs/decorator/array/ArrayMaxSize').ArrayMaxSize;
export const ArrayMinSize: CV['ArrayMinSize'] = require('class-validator/cjs/decorator/array/ArrayMinSize').ArrayMinSize;
export const IsDefined: CV['IsDefined'] = require('class-validator/cjs/decorator/common/IsDefined').IsDefined;
export const IsIn: CV['IsIn'] = require('class-validator/cjs/decorator/common/IsIn').IsIn;
export const IsOptional: CV['IsOptional'] = require('class-validator/cjs/decorator/common/IsOptional').IsOptional;
export const ValidateIf: CV['ValidateIf'] = require('class-validator/cjs/decorator/common/ValidateIf').ValidateIf;
export const ValidateNested: CV['ValidateNested'] = require('class-validator/cjs/decorator/common/ValidateNested').ValidateNested;
export const Max: CV['Max'] = require('class-validator/cjs/decorator/number/Max').Max;
export const Min: CV['Min'] = require('class-validator/cjs/decorator/number/Min').Min;
export const IsDateString: CV['IsDateString'] = require('class-validator/cjs/decorator/string/IsDateString').IsDateString;
export const IsIP: CV['IsIP'] = require('class-validator/cjs/decorator/string/IsIP').IsIP;
export const IsISO8601: CV['IsISO8601'] = require('class-validator/cjs/decorator/string/IsISO8601').IsISO8601;
export const IsUrl: CV['IsUrl'] = require('class-validator/cjs/decorator/string/IsUrl').IsUrl;
export const Matches: CV['Matches'] = require('class-validator/cjs/decorator/string/Matches').Matches;
export const MaxLength: CV['MaxLength'] = require('class-validator/cjs/decorator/string/MaxLength').MaxLength;
export const MinLength: CV['MinLength'] = require('class-validator/cjs/decorator/string/MinLength').MinLength;
export const IsArray: CV['IsArray'] = require('class-validator/cjs/decorator/typechecker/IsArray').IsArray;
export const IsBoolean: CV['IsBoolean'] = require('class-validator/cjs/decorator/typechecker/IsBoolean').IsBoolean;
export const IsInt: CV['IsInt'] = require('class-validator/cjs/decorator/typechecker/IsInt').IsInt;
export const IsObject: CV['IsObject'] = require('class-validator/cjs/decorator/typechecker/IsObject').IsObject;
export const IsString: CV['IsString'] = require('class-validator/cjs/decorator/typechecker/IsString').IsString;

export const getMetadataStorage: CV['getMetadataStorage'] = require('class-validator/cjs/metadata/MetadataStorage').getMetadataStorage;

/**
 * What Nest's ValidationPipe calls of class-validator (its `validatorPackage` option; without it the
 * pipe loads the index): `validate` of an object by its decorators, as the index's `validate` does
 * it, and the metadata storage.
 */
export const dtoValidatorPackage = {
  validate(object: object, options?: ClassValidator.ValidatorOptions): Promise<ClassValidator.ValidationError[]> {
    // Loaded at the first validation, then kept: a require() per request resolved the two paths
    // again every time (a file-system lookup and a package.json read, some 30 µs a request).
    validator ??= (() => {
      const { getFromContainer } = require('class-validator/cjs/container') as { getFromContainer: CV['getFromContainer'] };
      const { Validator } = require('class-validator/cjs/validation/Validator') as { Validator: CV['Validator'] };
      return getFromContainer(Validator);
    })();
    return validator.validate(object, options);
  },
  getMetadataStorage,
};

let validator: ClassValidator.Validator | undefined;
